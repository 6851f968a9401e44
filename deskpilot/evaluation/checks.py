"""Running a task's checks against the desktop, through the desktop's API only (so a suite scores an
appliance anywhere): files by ``read_file``, the rest by ``POST /command`` as the desktop user."""

from __future__ import annotations

import re
from dataclasses import dataclass

from deskpilot.computer.chords import CLIPBOARD_COMMAND, clipboard_text
from deskpilot.computer.client import Desktop
from deskpilot.errors import ClientError
from deskpilot.evaluation.suite import Check


@dataclass(frozen=True)
class CheckResult:
    check: str  # what was checked, in a few words
    passed: bool
    detail: str = ""  # why it failed


def run_check(check: Check, desktop: Desktop) -> CheckResult:
    if check.file is not None:
        f = check.file
        what = f"file {f.path}"
        try:
            text = desktop.read_file(home_path(f.path)).decode(errors="replace")
        except ClientError as exc:
            if exc.status == 404:
                return CheckResult(what, not f.exists, "" if not f.exists else "does not exist")
            raise
        if not f.exists:
            return CheckResult(what, False, "exists")
        return _text(what, f.problem(text))
    if check.command is not None:
        c = check.command
        what = f"command {c.run!r}"
        out = desktop.command(c.run)
        if out["exitCode"] != c.exit_code:
            detail = f"exit code {out['exitCode']}, not {c.exit_code}: {out['stderr'][-300:]}"
            return CheckResult(what, False, detail)
        return _text(what, c.problem(out["stdout"]))
    if check.window is not None:
        what = f"a window titled /{check.window.title}/"
        rows = [line.split(None, 3) for line in _lines(desktop, "wmctrl -l")]  # id, desktop, host, title
        titles = [row[3] for row in rows if len(row) == 4]
        found = any(re.search(check.window.title, t) for t in titles)
        return CheckResult(what, found, "" if found else f"the windows are {titles}")
    assert check.clipboard is not None
    return _text("the clipboard", check.clipboard.problem(clipboard_text(desktop.command(CLIPBOARD_COMMAND))))


def run_setup_command(desktop: Desktop, command: str) -> None:
    out = desktop.command(command)
    if out["exitCode"] != 0:
        raise SetupFailed(f"setup command {command!r} exited {out['exitCode']}: {out['stderr'][-300:]}")


def write_setup_file(desktop: Desktop, path: str, content: str) -> None:
    desktop.write_file(home_path(path), content)  # its folders are made as needed


class SetupFailed(RuntimeError):
    pass


def home_path(path: str) -> str:
    """A path of a task file (relative to the desktop user's home, or absolute) as write_file takes it."""
    return path if path.startswith("/") else f"~/{path}"


def _lines(desktop: Desktop, command: str) -> list[str]:
    return str(desktop.command(command)["stdout"]).splitlines()


def _text(what: str, problem: str | None) -> CheckResult:
    return CheckResult(what, problem is None, problem or "")
