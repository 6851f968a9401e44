"""The whole appliance, booted natively from supervisord.conf and rootfs/ exactly as `make run` boots it:
the product's ``NativeAppliance`` (deskpilot/client/native.py, what ``deskpilot.sandbox()`` boots), with the
probes the e2e tests and the startup bench read (supervisorctl, the session's environment, psutil).
"""

from __future__ import annotations

import contextlib
import os
import re
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import psutil

from deskpilot.client.native import NativeAppliance, free_display

__all__ = ["PROGRAMS", "ROOT", "Appliance", "free_display"]

ROOT = Path(__file__).resolve().parents[2]
PROGRAMS = ("dbus", "xvfb", "xfwm4", "xfdesktop", "xfce4-panel", "x11vnc", "desktop-api", "agent-api", "ui")


@dataclass
class Appliance(NativeAppliance):
    """The product's native appliance (what ``deskpilot.sandbox()`` boots) with the tests' probes."""

    checkout: Path = ROOT
    base: Path = field(default_factory=lambda: Path(tempfile.mkdtemp(prefix="deskpilot-e2e-")))
    venv: Path | None = ROOT / ".venv"
    boot_seconds: float = 0.0

    @property
    def health_urls(self) -> list[str]:
        return [f"{u}/health" for u in (self.desktop_url, self.agent_url, self.ui_url)]

    @property
    def session_env(self) -> dict[str, str]:
        """What a program in the appliance's desktop session sees (see [supervisord] environment=)."""
        return {
            **os.environ,
            "DISPLAY": self.display,
            "HOME": str(self.home),
            "XDG_RUNTIME_DIR": str(self.base / "run" / "session"),
            "TMPDIR": str(self.base / "run" / "session" / "tmp"),
            "DBUS_SESSION_BUS_ADDRESS": f"unix:path={self.base / 'run' / 'session' / 'bus'}",
            "NO_AT_BRIDGE": "1",
        }

    def start(self) -> Appliance:
        super().start()
        return self

    def processes(self) -> list[psutil.Process]:
        """Every live process the appliance started."""
        out = []
        for pid in self.pids():
            with contextlib.suppress(psutil.NoSuchProcess):
                out.append(psutil.Process(pid))
        return out

    # ------------------------------------------------------------------------------------------ helpers

    def ctl(self, *args: str) -> str:
        """supervisorctl against this appliance."""
        out = subprocess.run(
            [str(ROOT / ".venv" / "bin" / "supervisorctl"), "-c", str(ROOT / "supervisord.conf"), *args],
            env={**self.env, "DESKPILOT_SERVICE_USER": "user"},
            capture_output=True,
            text=True,
            timeout=30,
        )
        return out.stdout + out.stderr

    def pid(self, program: str) -> int:
        return int(self.ctl("pid", program).strip())

    def status(self) -> dict[str, str]:
        """{program: state}, e.g. {"xvfb": "RUNNING"}."""
        rows = [line.split() for line in self.ctl("status").splitlines()]
        return {row[0]: row[1] for row in rows if len(row) > 1}

    @property
    def service_user(self) -> str:
        """Who appliance.sh decided runs the services: `user`, or root for a checkout `user` cannot read."""
        m = re.search(r"services as (\S+),", self.log.read_text(errors="replace"))
        assert m, f"no launcher line in the log:\n{self.log_tail()}"
        return m.group(1)
