"""The accessibility probe when the worker may not use the session's bus: /health says why, never a 500."""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from deskpilot.desktop import atspi

DESKTOP_USER = "user"


@pytest.fixture
def users_bus() -> Iterator[str]:
    """A session bus of the desktop user's, as the appliance runs it (dbus-daemon's session configuration)."""
    if os.geteuid() != 0:
        pytest.skip("needs root: the bus is another user's")
    base = Path(tempfile.mkdtemp(prefix="deskpilot-bus-"))
    shutil.chown(base, DESKTOP_USER)
    path = base / "bus"
    daemon = subprocess.Popen(
        [
            "runuser",
            "-u",
            DESKTOP_USER,
            "--",
            "dbus-daemon",
            "--session",
            "--nofork",
            "--nopidfile",
            f"--address=unix:path={path}",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 10
        while not path.exists():
            assert time.monotonic() < deadline and daemon.poll() is None, "dbus-daemon did not start"
            time.sleep(0.02)
        yield f"unix:path={path}"
    finally:
        daemon.terminate()
        daemon.wait(10)
        shutil.rmtree(base, ignore_errors=True)


def test_a_bus_that_refuses_root_is_a_problem_said_not_an_error(
    users_bus: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A checkout the desktop user cannot read: the launcher runs the worker as root, and the desktop user's
    session bus hangs up on root during authentication."""
    monkeypatch.delenv("AT_SPI_BUS_ADDRESS", raising=False)
    monkeypatch.setenv("DBUS_SESSION_BUS_ADDRESS", users_bus)
    client = atspi.Atspi()
    try:
        problem = asyncio.run(client.problem())
    finally:
        client.close()
    # the bus hangs up during authentication: an EOFError or a reset connection, as it happens
    assert problem is not None and "); it runs as root" in problem, problem
    assert "admit the desktop user only" in problem
