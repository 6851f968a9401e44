"""A private Xvfb display (and window manager) per test session, on a free display number of :20-:99."""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from deskpilot.client.native import free_displays
from testbed import ROOT

# The appliance's Xfce settings (scripts/appliance.sh installs them into the desktop user's home at start)
ROOTFS_CONFIG = ROOT / "rootfs" / "home" / "user" / ".config"


@dataclass
class Display:
    name: str  # ":N"
    xvfb: subprocess.Popen
    children: list[subprocess.Popen] = field(default_factory=list)
    scratch: list[Path] = field(default_factory=list)  # directories removed when the display stops

    @property
    def env(self) -> dict[str, str]:
        return {**os.environ, "DISPLAY": self.name}

    def spawn(self, argv: list[str], **kwargs) -> subprocess.Popen:
        """Start a program on this display; it is killed when the display stops."""
        proc = subprocess.Popen(
            argv,
            env={**self.env, **kwargs.pop("env", {})},
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
            **kwargs,
        )
        self.children.append(proc)
        return proc

    def pointer(self) -> tuple[int, int]:
        """Where the real pointer is (read with xdotool, a client of its own)."""
        out = subprocess.run(
            ["xdotool", "getmouselocation", "--shell"],
            env=self.env,
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        values = dict(line.split("=", 1) for line in out.split())
        return int(values["X"]), int(values["Y"])

    def stop(self) -> None:
        for proc in [*reversed(self.children), self.xvfb]:
            _terminate(proc)
        self.children.clear()
        for path in self.scratch:
            shutil.rmtree(path, ignore_errors=True)
        self.scratch.clear()


def _terminate(proc: subprocess.Popen) -> None:
    if proc.poll() is not None:
        return
    try:
        os.killpg(proc.pid, 15)
    except ProcessLookupError:
        return
    except PermissionError:
        proc.terminate()
    try:
        proc.wait(timeout=5)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, 9)
        proc.wait(timeout=5)


# never :0, where `make run` puts the appliance's (Xvfb's own choice with -displayfd alone starts there), and
# not the numbers the client gives sandboxes (deskpilot.client.native.free_display: 100-399)
NUMBERS = range(20, 100)


def start_xvfb(
    width: int = 1920,
    height: int = 1080,
    depth: int = 24,
    extra_args: Sequence[str] = (),
    user: str | None = None,
) -> Display:
    """Start Xvfb on a free display number of ``NUMBERS``.

    ``extra_args`` go to Xvfb as they are (``["-extension", "MIT-SHM"]`` takes an extension away); ``user``
    runs it as that user (the test must run as root then).
    """
    for number in free_displays(NUMBERS):
        display = _try_display(number, width, height, depth, extra_args, user)
        if display is not None:
            return display
    raise RuntimeError(f"no free display number in :{NUMBERS.start}-:{NUMBERS.stop - 1}")


def start_xvfb_at(number: int) -> Display | None:
    """Xvfb on ``:number`` (1920x1080x24), or None when another server has that number."""
    return _try_display(number, 1920, 1080, 24, (), None)


def _try_display(
    number: int, width: int, height: int, depth: int, extra_args: Sequence[str], user: str | None
) -> Display | None:
    """Xvfb on ``:number``, or None when another server took that number first (a parallel test run)."""
    read_fd, write_fd = os.pipe()
    creds: dict[str, Any] = {}
    if user is not None:
        entry = pwd.getpwnam(user)
        creds = {"user": entry.pw_uid, "group": entry.pw_gid, "extra_groups": []}
    proc = subprocess.Popen(
        [
            "Xvfb",
            f":{number}",
            "-displayfd",  # written once the server listens: the readiness signal
            str(write_fd),
            "-screen",
            "0",
            f"{width}x{height}x{depth}",
            "-nolisten",
            "tcp",
            "-noreset",
            "+extension",
            "XTEST",
            *extra_args,
        ],
        pass_fds=(write_fd,),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
        **creds,
    )
    os.close(write_fd)
    with os.fdopen(read_fd) as pipe:
        reported = pipe.readline().strip()
    if reported != str(number):  # it exited: the number is taken (its lock file is another server's)
        _terminate(proc)
        proc.wait()
        return None
    name = f":{number}"
    socket = Path(f"/tmp/.X11-unix/X{number}")
    deadline = time.monotonic() + 10
    while not socket.exists():
        if time.monotonic() > deadline or proc.poll() is not None:
            _terminate(proc)
            raise RuntimeError(f"Xvfb {name} did not come up")
        time.sleep(0.01)
    return Display(name=name, xvfb=proc)


@contextmanager
def managed_display() -> Iterator[Display]:
    """A private Xvfb with xfwm4 for the duration of the block; every program started on it dies with it."""
    d = start_xvfb()
    try:
        start_window_manager(d)
        yield d
    finally:
        d.stop()


def start_window_manager(display: Display) -> subprocess.Popen:
    """xfwm4, the appliance's own window manager, with the appliance's own settings (EWMH: activation and
    maximising as in production; Alt+click left to applications).

    xfwm4 reads its settings from xfconfd over a session bus, as in the appliance: a private bus per display
    (dbus-run-session, which also ends with it), whose xfconfd reads the repository's rootfs channel files
    themselves as system defaults (``XDG_CONFIG_DIRS``) and writes what it saves to a scratch directory.
    """
    wm = shutil.which("xfwm4")
    assert wm, "xfwm4 is missing: run `make system-test`"
    saved = Path(tempfile.mkdtemp(prefix="deskpilot-xfconf-"))
    display.scratch.append(saved)
    env = {"XDG_CONFIG_DIRS": f"{ROOTFS_CONFIG}:/etc/xdg", "XDG_CONFIG_HOME": str(saved), "NO_AT_BRIDGE": "1"}
    proc = display.spawn(["dbus-run-session", "--", wm, "--compositor=off", "--sm-client-disable"], env=env)
    _wait_for_wm(display)
    return proc


def _wait_for_wm(display: Display, timeout: float = 10) -> None:
    """A WM is up once it sets _NET_SUPPORTING_WM_CHECK on the root window."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        out = subprocess.run(
            ["xprop", "-root", "_NET_SUPPORTING_WM_CHECK"], env=display.env, capture_output=True, text=True
        ).stdout
        if "window id" in out:
            return
        time.sleep(0.05)
    raise RuntimeError("window manager did not start")
