"""The desktop session's accessibility (AT-SPI) bus for a test display, as the appliance runs it: a session
bus of the desktop user's and at-spi-bus-launcher on it (supervisord.conf's ``dbus`` and ``at-spi``)."""

from __future__ import annotations

import os
import pwd
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from testbed.timing import wait_until
from testbed.xvfb import Display


def _as_user(user: str | None) -> dict[str, object]:
    if user is None or os.geteuid() != 0:
        return {}
    entry = pwd.getpwnam(user)
    return {"user": entry.pw_uid, "group": entry.pw_gid, "extra_groups": []}


@contextmanager
def accessibility_bus(display: Display, user: str | None = None) -> Iterator[str]:
    """A session bus and the AT-SPI bus on ``display`` (as ``user`` when we are root), their processes
    children of the display; yields the AT-SPI bus's address, which this process's environment holds as
    ``AT_SPI_BUS_ADDRESS`` meanwhile: the service's client reads it, and passes it on to the programs
    ``application`` starts (deskpilot/desktop/session.py), as libatspi and Qt read it."""
    creds = _as_user(user)
    runtime = Path(tempfile.mkdtemp(prefix="deskpilot-atspi-"))
    display.scratch.append(runtime)
    if creds:
        os.chown(runtime, int(str(creds["user"])), int(str(creds["group"])))
    session = f"unix:path={runtime}/bus"
    env = {"XDG_RUNTIME_DIR": str(runtime), "HOME": str(runtime), "DBUS_SESSION_BUS_ADDRESS": session}
    argv = ["dbus-daemon", "--session", "--nofork", "--nopidfile", f"--address={session}"]
    display.spawn(argv, env=env, **creds)
    wait_until(lambda: (runtime / "bus").exists(), 10, what="the session bus")
    display.spawn(["/usr/libexec/at-spi-bus-launcher", "--launch-immediately"], env=env, **creds)
    ask = ["dbus-send", "--session", "--print-reply=literal", "--dest=org.a11y.Bus", "/org/a11y/bus"]
    ask.append("org.a11y.Bus.GetAddress")

    def address() -> str:
        done = subprocess.run(ask, env={**os.environ, **env}, capture_output=True, text=True, **creds)  # type: ignore[call-overload]
        return done.stdout.strip() if done.returncode == 0 else ""

    found = str(wait_until(address, 10, what="the AT-SPI bus"))
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("AT_SPI_BUS_ADDRESS", found)
        yield found
