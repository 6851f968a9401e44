"""A private appliance from its container image, run as the README runs it, on a Docker engine.

The engine ``scripts/docker-engine.sh`` starts has no bridge (it leaves the host's network alone), so the
container shares the host's network: the appliance inside listens on free host ports (DESKTOP_PORT,
TASKS_PORT, UI_PORT), on loopback unless told otherwise, and its display number is one no X
server of the host uses (the appliance's Xvfb opens no abstract socket, but other X servers of the host do):
500-999, above the numbers native sandboxes and the test suite take. ``--rm`` with the image's anonymous
volumes: stopping it leaves nothing behind.
"""

from __future__ import annotations

import subprocess
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from deskpilot.client.native import ROOT, ApplianceError, Endpoints, free_display, free_port, new_token

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


def start_engine(checkout: Path = ROOT) -> None:
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
class ImageAppliance(Endpoints):
    image: str
    env: dict[str, str] = field(default_factory=dict)  # more settings, e.g. AGENT_MODEL
    name: str = field(default_factory=lambda: f"deskpilot-sandbox-{uuid.uuid4().hex[:8]}")
    display: str = field(default_factory=lambda: free_display(HOST_DISPLAYS))
    desktop_port: int = field(default_factory=free_port)
    agent_port: int = field(default_factory=free_port)
    ui_port: int = field(default_factory=free_port)
    # DESKPILOT_TOKEN; None: none given, so an appliance listening beyond loopback generates one
    token: str | None = field(default_factory=new_token)
    # the host's loopback only by default: the host's network is shared; "0.0.0.0" as the image ships
    host: str = "127.0.0.1"
    started_at: float = 0.0

    @property
    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"} if self.token else {}

    def options(self) -> list[str]:
        """``docker run``'s options beyond the network and the settings: removed when it stops."""
        return ["--rm"]

    def run(self) -> ImageAppliance:
        """``docker run -d`` on the host's network; returns at once."""
        settings = {
            **self.env,
            "DESKPILOT_DISPLAY": self.display,
            "DESKPILOT_HOST": self.host,
            "DESKTOP_PORT": str(self.desktop_port),
            "TASKS_PORT": str(self.agent_port),
            "UI_PORT": str(self.ui_port),
            **({"DESKPILOT_TOKEN": self.token} if self.token else {}),
        }
        env = [arg for k, v in settings.items() for arg in ("-e", f"{k}={v}")]
        self.started_at = time.monotonic()
        docker(
            "run", "-d", "--name", self.name, "--network", "host", "--shm-size", "1g",
            *self.options(), *env, self.image,
        )  # fmt: skip
        return self

    def problem(self) -> str | None:
        if docker("inspect", "-f", "{{.State.Running}}", self.name, check=False).strip() != "true":
            return f"the container exited:\n{self.log_tail()}"
        return None

    def log_tail(self) -> str:
        return self.logs()[-3000:]

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

    def start(self) -> ImageAppliance:
        return self.run()

    def shutdown(self) -> list[str]:
        """Stopped and removed: nothing is left."""
        self.stop()
        self.remove()
        return []
