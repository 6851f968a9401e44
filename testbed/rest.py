"""The screen at rest, as the truth tests and the navigation bench judge a frame against it."""

from __future__ import annotations

import time

from deskpilot.computer.client import Desktop

REST_S = 1.5  # the screen has rested once its frame stayed the same this long


def rested(desktop: Desktop, width: int, timeout: float = 20) -> str:
    """The screen (``width`` wide, base64) once its frame has stayed the same for ``REST_S`` (the desktop
    serves an unchanged screen again without capturing it, so this loop is cheap)."""
    last, since = "", time.monotonic()
    deadline = since + timeout
    while time.monotonic() < deadline:
        frame = str(desktop.action("screenshot", width=width)["data"]["image"])
        if frame != last:
            last, since = frame, time.monotonic()
        elif time.monotonic() - since >= REST_S:
            return frame
        time.sleep(0.1)
    raise AssertionError(f"the screen did not rest for {REST_S} s within {timeout} s")
