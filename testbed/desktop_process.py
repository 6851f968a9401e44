"""The desktop service in a uvicorn process of its own, as the appliance runs it, so that its memory can be
measured (the body-limit and body-budget tests, bench/write_memory.py)."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from testbed import ROOT
from testbed.groups import stop_group
from testbed.net import free_port, wait_http
from testbed.xvfb import Display

# what supervisord.conf gives the desktop service's uvicorn for its WebSockets
WEBSOCKETS = ["--ws-per-message-deflate", "false", "--ws-max-size", "4194304", "--ws-max-queue", "8"]


@contextmanager
def desktop_process(display: Display, **settings: str) -> Iterator[tuple[str, int]]:
    """Its URL and pid; ``settings`` are its environment's ``DESKTOP_*`` variables. Stopped on exit."""
    port = free_port()
    argv = [sys.executable, "-m", "uvicorn", "--factory", "deskpilot.desktop.api:create_app", *WEBSOCKETS]
    argv += ["--host", "127.0.0.1", "--port", str(port), "--workers", "1", "--log-level", "warning"]
    env = {"PYTHONPATH": str(ROOT), "DESKTOP_DISPLAY": display.name, **settings}
    proc = display.spawn(argv, env=env, cwd=ROOT)
    try:
        url = f"http://127.0.0.1:{port}"
        wait_http(f"{url}/health/live")
        yield url, proc.pid
    finally:
        stop_group(proc)


def peak_rss(pid: int) -> int:
    """The most resident memory the process has used so far (VmHWM), in bytes."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    raise AssertionError(f"no VmHWM for {pid}")
