"""A private appliance from its container image, run as the README runs it, on a Docker engine.

The engine ``scripts/docker-engine.sh`` starts has no bridge (it leaves the host's network alone), so the
container shares the host's network: the appliance inside listens on free host ports (DESKTOP_PORT,
AGENT_PORT, UI_PORT, DESKTOP_VNC_PORT) on loopback, and its display number is one no X server of the host
uses (X's abstract socket lives in the network namespace too): 500-999, above the numbers native sandboxes
and the test suite take. ``--rm`` with the image's anonymous volumes: stopping it leaves nothing behind.
"""

from __future__ import annotations

import secrets
import subprocess
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from deskpilot.client.native import CHECKOUT, ApplianceError, free_display, free_port

HOST_DISPLAYS = range(500, 1000)
ENGINE = Path("scripts") / "docker-engine.sh"


class EngineUnavailable(ApplianceError):
    """No Docker engine can be had here (scripts/docker-engine.sh exit status 3)."""


def docker(*args: str, check: bool = True, timeout: float = 120) -> str:
    try:
        r = subprocess.run(["docker", *args], capture_output=True, text=True, timeout=timeout)
    except FileNotFoundError:
        raise EngineUnavailable(
            "no docker command: install Docker, or run scripts/docker-engine.sh start"
        ) from None
    if check and r.returncode:
        raise ApplianceError(f"docker {' '.join(args[:2])} exited {r.returncode}: {r.stderr.strip()}")
    return r.stdout


def start_engine(checkout: Path = CHECKOUT) -> None:
    """An engine that answers: the one running, else scripts/docker-engine.sh's (installed and started when
    missing); EngineUnavailable when none can be had."""
    try:
        if subprocess.run(["docker", "info"], capture_output=True, timeout=30).returncode == 0:
            return
    except FileNotFoundError:
        pass
    script = checkout / ENGINE
    if not script.is_file():
        raise EngineUnavailable(
            "no Docker engine answers (docker info), and no scripts/docker-engine.sh here"
        )
    r = subprocess.run([str(script), "start"], capture_output=True, text=True)
    if r.returncode == 3:
        raise EngineUnavailable(r.stderr.strip())
    if r.returncode:
        raise ApplianceError(f"docker-engine.sh start failed:\n{r.stderr}")


@dataclass
class ImageAppliance:
    image: str
    env: dict[str, str] = field(default_factory=dict)  # more settings, e.g. AGENT_MODEL
    name: str = field(default_factory=lambda: f"deskpilot-sandbox-{uuid.uuid4().hex[:8]}")
    display: str = field(default_factory=lambda: free_display(HOST_DISPLAYS))
    desktop_port: int = field(default_factory=free_port)
    agent_port: int = field(default_factory=free_port)
    ui_port: int = field(default_factory=free_port)
    vnc_port: int = field(default_factory=free_port)
    token: str = field(default_factory=lambda: secrets.token_urlsafe(32))
    started_at: float = 0.0

    @property
    def desktop_url(self) -> str:
        return f"http://127.0.0.1:{self.desktop_port}"

    @property
    def agent_url(self) -> str:
        return f"http://127.0.0.1:{self.agent_port}"

    @property
    def ui_url(self) -> str:
        return f"http://127.0.0.1:{self.ui_port}"

    def options(self) -> list[str]:
        """``docker run``'s options beyond the network and the settings: removed when it stops."""
        return ["--rm"]

    def run(self) -> ImageAppliance:
        """``docker run -d`` on the host's network; returns at once."""
        settings = {
            **self.env,
            "DESKPILOT_DISPLAY": self.display,
            "DESKPILOT_HOST": "127.0.0.1",  # the host's loopback only: the host's network is shared
            "DESKTOP_PORT": str(self.desktop_port),
            "AGENT_PORT": str(self.agent_port),
            "UI_PORT": str(self.ui_port),
            "DESKTOP_VNC_PORT": str(self.vnc_port),
            "DESKPILOT_TOKEN": self.token,
        }
        env = [arg for k, v in settings.items() for arg in ("-e", f"{k}={v}")]
        self.started_at = time.monotonic()
        docker(
            "run", "-d", "--name", self.name, "--network", "host", "--shm-size", "1g",
            *self.options(), *env, self.image,
        )  # fmt: skip
        return self

    def wait_ready(self, timeout: float = 90) -> float:
        """Seconds from ``run`` until the three services' /health answered 200."""
        pending = [f"{u}/health" for u in (self.desktop_url, self.agent_url, self.ui_url)]
        deadline = self.started_at + timeout
        with httpx.Client(timeout=1) as client:
            while pending:
                if time.monotonic() > deadline:
                    raise ApplianceError(f"not ready after {timeout:g} s: {pending}\n{self.logs()[-3000:]}")
                try:
                    if client.get(pending[0]).status_code == 200:
                        pending.pop(0)
                        continue
                except httpx.HTTPError:
                    if (
                        docker("inspect", "-f", "{{.State.Running}}", self.name, check=False).strip()
                        != "true"
                    ):
                        raise ApplianceError(f"the container exited:\n{self.logs()[-3000:]}") from None
                time.sleep(0.05)
        return time.monotonic() - self.started_at

    def stop(self, timeout: int = 10) -> float:
        """``docker stop`` (SIGTERM, then SIGKILL after ``timeout`` s); its seconds."""
        started = time.monotonic()
        docker("stop", "-t", str(timeout), self.name, timeout=timeout + 60, check=False)
        return time.monotonic() - started

    def logs(self) -> str:
        r = subprocess.run(["docker", "logs", self.name], capture_output=True, text=True, timeout=60)
        return r.stdout + r.stderr

    def remove(self) -> None:
        """The container and its anonymous volumes, whatever state it is in."""
        docker("rm", "-f", "-v", self.name, check=False)
