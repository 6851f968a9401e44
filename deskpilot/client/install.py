"""``deskpilot install`` and ``deskpilot up``: the native appliance from the installed package, as
``playwright install --with-deps`` sets up Playwright's browsers.

    deskpilot install              say what the appliance lacks here (exit 1 when something), change nothing
    deskpilot install --with-deps  install it, as root: Debian packages, noVNC's files, the appliance's users
                                   and its files under /etc (scripts/install-system.sh, idempotent)
    deskpilot up [--print-config]  start the whole appliance in the foreground (Ctrl-C stops it), as
                                   ``make run`` does in a checkout; settings: docs/operations.md

Both use the appliance's files wherever this package finds them (``native.appliance_root``): the copy the
wheel carries, or the checkout the package is imported from.
"""

from __future__ import annotations

import argparse
import os
import stat
import subprocess
import sys
from pathlib import Path

from deskpilot.client.native import LAUNCHER, ApplianceError, appliance_root, check_venv, default_venv

INSTALLER = Path("scripts") / "install-system.sh"


def add_commands(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    install = commands.add_parser("install", help="check (or, --with-deps, install) what the appliance needs")
    install.add_argument(
        "--with-deps",
        action="store_true",
        help="install the Debian packages, noVNC and the appliance's users (as root; idempotent)",
    )
    up = commands.add_parser("up", help="start the appliance in the foreground (as root; Ctrl-C stops it)")
    up.add_argument("--print-config", action="store_true", help="print the resolved settings and exit")


def install_command(args: argparse.Namespace) -> int:
    root = appliance_root()
    script = [str(root / INSTALLER), *([] if args.with_deps else ["--check"])]
    system = subprocess.run(["bash", *script], stdin=subprocess.DEVNULL).returncode
    problems = [] if system == 0 else ["the system layer above: run `deskpilot install --with-deps` as root"]
    venv = default_venv(root)
    try:
        check_venv(venv)
    except ApplianceError as exc:
        problems.append(str(exc))
    if unreadable := _hidden_from_others(Path(__file__)):
        # the launcher runs a service as root when its user cannot read the code (it warns at each start)
        print(
            f"deskpilot install: {unreadable} is closed to other users: the appliance's services will run as "
            "root; install into a venv they can read (e.g. under /opt) to run each as its own user"
        )
    if problems:
        for problem in problems:
            print(f"deskpilot install: missing {problem}", file=sys.stderr)
        return 1
    print(f"deskpilot install: ready: `deskpilot up` or a native sandbox runs from {root} with {venv}")
    return 0


def up_command(args: argparse.Namespace) -> int:
    """Exec the launcher, so that signals reach supervisord as under ``make run``; returns only on failure."""
    root = appliance_root()
    env = dict(os.environ)
    env.setdefault("DESKPILOT_VENV", str(default_venv(root)))
    try:
        check_venv(Path(env["DESKPILOT_VENV"]))
    except ApplianceError as exc:
        print(f"deskpilot up: {exc}", file=sys.stderr)
        return 2
    launcher = str(root / LAUNCHER)
    os.execve(launcher, [launcher, *(["--print-config"] if args.print_config else [])], env)


def _hidden_from_others(path: Path) -> Path | None:
    """The first directory above ``path`` others may not enter, or None."""
    for parent in path.resolve().parents:
        if not parent.stat().st_mode & stat.S_IXOTH:
            return parent
    return None
