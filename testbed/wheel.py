"""Deskpilot as a team installs it: a wheel built from a clean copy of this repository (never the checkout
itself), installed with its extras into a fresh venv outside the repository; and the environment of a
command run there, which sees nothing of the checkout. Used by tests/e2e/test_wheel.py and bench/sandbox.py.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from testbed import ROOT

# what the venv's users must reach for the appliance's services to run as themselves, not as root
OPEN = 0o755
# a project's two tests on the plugin's fixtures; each writes which worker ran it, on which sandbox, and where
# the appliance's files were
TWO_TESTS = """
import os
from pathlib import Path

import deskpilot.client.native


def record(box, name):
    worker = os.environ.get("PYTEST_XDIST_WORKER", "-")
    Path(name).write_text(f"{worker} {box.desktop_url} {deskpilot.client.native.ROOT}")


def test_the_screen(desktop, deskpilot_sandbox):
    assert desktop.screenshot().size == (1920, 1080)
    record(deskpilot_sandbox, "one.txt")


def test_a_file(desktop, deskpilot_sandbox):
    desktop.write_file("hello.txt", "hello")
    assert desktop.read_file("hello.txt").text == "hello"
    record(deskpilot_sandbox, "two.txt")
"""


def clean_copy(dest: Path) -> Path:
    """The files git knows of (tracked, and new ones not ignored) as they are in the work tree: a fresh clone
    with the changes not committed yet; no venv, no build directory, no caches."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT, capture_output=True, check=True,
    ).stdout  # fmt: skip
    for name in filter(None, listed.decode().split("\0")):
        source = ROOT / name
        if source.is_file():  # a file deleted in the work tree stays listed until the change is committed
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, dest / name, follow_symlinks=False)
    return dest


def build_wheel(out: Path) -> Path:
    """The wheel of a clean copy of the repository, built by pip (its cache serves the build's setuptools)."""
    with tempfile.TemporaryDirectory(prefix="deskpilot-source-") as source:
        clean_copy(Path(source))
        subprocess.run(
            [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--disable-pip-version-check",
             "-w", str(out), source],
            check=True, stdin=subprocess.DEVNULL,
        )  # fmt: skip
    (wheel,) = out.glob("deskpilot-*.whl")
    return wheel


def fresh_venv(venv: Path, *requirements: str) -> Path:
    """A venv from Debian's interpreter (as install-python.sh makes one) with ``requirements`` installed at
    the versions CI tests (constraints.txt); pip's cache is used. Its directories are opened to the
    appliance's users, as a venv under /opt would be."""
    subprocess.run(["/usr/bin/python3", "-m", "venv", str(venv)], check=True)
    subprocess.run(
        [str(venv / "bin" / "pip"), "install", "-q", "--disable-pip-version-check",
         "-c", str(ROOT / "constraints.txt"), *requirements],
        check=True, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    for path in (venv, *venv.parents):
        if path == Path(tempfile.gettempdir()):
            break
        path.chmod(path.stat().st_mode | OPEN)
    return venv


def outside_env(venv: Path) -> dict[str, str]:
    """The environment of a command run with ``venv`` active: none of the checkout's Python path."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME")}
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    env["VIRTUAL_ENV"] = str(venv)
    return env
