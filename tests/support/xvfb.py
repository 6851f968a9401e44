"""A private Xvfb display (and window manager) per test session, on a display number Xvfb picks itself."""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass
class Display:
    name: str  # ":N"
    xvfb: subprocess.Popen
    children: list[subprocess.Popen] = field(default_factory=list)

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


def start_xvfb(
    width: int = 1920,
    height: int = 1080,
    depth: int = 24,
    extra_args: Sequence[str] = (),
    user: str | None = None,
) -> Display:
    """Start Xvfb with -displayfd so it picks a free display number (never clashes with :0 or a neighbour).

    ``extra_args`` go to Xvfb as they are (``["-extension", "MIT-SHM"]`` takes an extension away); ``user``
    runs it as that user (the test must run as root then).
    """
    read_fd, write_fd = os.pipe()
    creds: dict[str, Any] = {}
    if user is not None:
        entry = pwd.getpwnam(user)
        creds = {"user": entry.pw_uid, "group": entry.pw_gid, "extra_groups": []}
    proc = subprocess.Popen(
        [
            "Xvfb",
            "-displayfd",
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
        number = pipe.readline().strip()
    if not number:
        _terminate(proc)
        raise RuntimeError("Xvfb did not report a display number")
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
    """xfwm4, the appliance's own window manager (EWMH: activation and maximising as in production)."""
    wm = shutil.which("xfwm4")
    assert wm, "xfwm4 is missing: run `make system-test`"
    proc = display.spawn([wm, "--compositor=off", "--sm-client-disable"])
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
