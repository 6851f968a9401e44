"""x11vnc on a test display, on localhost at a free port (as supervisord runs it in the appliance)."""

from __future__ import annotations

import contextlib
import socket
import subprocess
import time
from collections.abc import Iterator

from testbed.net import free_port
from testbed.xvfb import Display


def start_x11vnc(display: Display, timeout: float = 10) -> tuple[subprocess.Popen, int]:
    port = free_port()
    argv = ["x11vnc", "-display", display.name, "-localhost", "-rfbport", str(port)]
    proc = display.spawn([*argv, "-forever", "-shared", "-nopw", "-quiet", "-noxdamage"])
    deadline = time.monotonic() + timeout
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return proc, port
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                proc.kill()
                raise RuntimeError("x11vnc did not start") from None
            time.sleep(0.05)


@contextlib.contextmanager
def x11vnc(display: Display) -> Iterator[int]:
    """x11vnc on ``display`` for the block: its port; stopped at the end."""
    proc, port = start_x11vnc(display)
    try:
        yield port
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:  # seen once in CI on a loaded machine: stopped all the same
            proc.kill()
            proc.wait(10)
