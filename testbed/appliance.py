"""The whole appliance, booted natively from supervisord.conf and rootfs/ exactly as `make run` boots it:
the product's ``NativeAppliance`` (deskpilot/client/native.py, what ``deskpilot.sandbox()`` boots), with the
probes the e2e tests and the startup bench read (supervisorctl, the session's environment, psutil). It
requires a token (its own, given as DESKPILOT_TOKEN) unless told otherwise.
"""

from __future__ import annotations

import contextlib
import os
import re
import secrets
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import psutil

from deskpilot.client.native import NativeAppliance, free_display
from deskpilot.config import PROVIDERS
from deskpilot.scripted import ScriptedModel
from testbed import ROOT

__all__ = ["PROGRAMS", "ROOT", "Appliance", "agent_secrets", "free_display", "model_settings"]

PROGRAMS = (
    "dbus",
    "at-spi",
    "xvfb",
    "xfwm4",
    "xfdesktop",
    "xfce4-panel",
    "x11vnc",
    "hands",
    "desktop-api",
    "task-api",
    "ui",
)


def agent_secrets() -> dict[str, str]:
    """A fresh value for each variable only the task service may see: every provider's key and model
    (deskpilot/config.py's PROVIDERS), the LLM proxy's and the OpenAI-compatible server's keys."""
    names = [v for p in PROVIDERS for v in (p.key_var, p.model_var)]
    names += ["AGENT_LLM_PROXY_KEY", "AGENT_OPENAI_BASE_KEY"]
    return {name: f"fake-{name.lower()}-{secrets.token_hex(12)}" for name in names}


def model_settings(model: ScriptedModel) -> dict[str, str]:
    """The appliance's agent on the scripted model, failing fast when the script runs out."""
    return {
        "AGENT_OPENAI_BASE_URL": model.base_url,
        "AGENT_MODEL": f"local/{model.model}",
        "AGENT_LLM_RETRIES": "0",
        "AGENT_LLM_BACKOFF": "0.01",
    }


@dataclass
class Appliance(NativeAppliance):
    """The product's native appliance (what ``deskpilot.sandbox()`` boots) with the tests' probes."""

    checkout: Path = ROOT
    base: Path = field(default_factory=lambda: Path(tempfile.mkdtemp(prefix="deskpilot-e2e-")))
    venv: Path | None = ROOT / ".venv"
    token: str | None = field(default_factory=lambda: secrets.token_urlsafe(32))
    boot_seconds: float = 0.0

    @property
    def health_urls(self) -> list[str]:
        return [f"{u}/health" for u in (self.desktop_url, self.agent_url, self.ui_url)]

    @property
    def session_env(self) -> dict[str, str]:
        """What a program in the appliance's desktop session sees (the launcher's session_env)."""
        return {
            **os.environ,
            "DISPLAY": self.display,
            "XAUTHORITY": str(self.run_dir / "Xauthority"),
            "HOME": str(self.home),
            "XDG_RUNTIME_DIR": str(self.run_dir / "session"),
            "TMPDIR": str(self.run_dir / "session" / "tmp"),
            "DBUS_SESSION_BUS_ADDRESS": f"unix:path={self.run_dir / 'session' / 'bus'}",
            "NO_AT_BRIDGE": "1",  # the appliance's default (DESKTOP_ACCESSIBILITY off)
        }

    def start(self) -> Appliance:
        super().start()
        return self

    def restart(self, **settings: str) -> list[str]:
        """Stop, then start again on the same home, state, display and ports, with `settings` changed (a
        value of "" drops one); returns what the stop left behind. The log starts afresh."""
        leftovers = self.stop()
        self.settings = {k: v for k, v in {**self.settings, **settings}.items() if v}
        self.start()
        self.wait_ready()
        return leftovers

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
            env=self.env,
            capture_output=True,
            text=True,
            timeout=30,
        )
        return out.stdout + out.stderr

    def computer(self, action: str, **fields: object) -> httpx.Response:
        """POST /computer-use with the appliance's token."""
        url, body = f"{self.desktop_url}/computer-use", {"action": action, **fields}
        return httpx.post(url, json=body, headers=self.headers, timeout=120)

    def pid(self, program: str) -> int:
        return int(self.ctl("pid", program).strip())

    def status(self) -> dict[str, str]:
        """{program: state}, e.g. {"xvfb": "RUNNING"}."""
        rows = [line.split() for line in self.ctl("status").splitlines()]
        return {row[0]: row[1] for row in rows if len(row) > 1}

    def runs_as(self) -> dict[str, str]:
        """Who appliance.sh decided runs each program: the desktop user, the services' system user, or root
        for a checkout one of them cannot read."""
        log = self.log.read_text(errors="replace")
        m = re.search(
            r"session and its worker run as (\S+), display and desktop service as (\S+), task service and UI "
            r"as (\S+),",
            " ".join(log.split()),
        )
        assert m, f"no launcher line in the log:\n{self.log_tail()}"
        session, display, agent = m.groups()
        return (
            {p: session for p in PROGRAMS}
            | dict.fromkeys(("xvfb", "x11vnc", "desktop-api"), display)
            | dict.fromkeys(("task-api", "ui"), agent)
        )
