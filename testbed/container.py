"""The appliance image, built from this checkout and run as the README runs it, beside what else runs here.

The engine scripts/docker-engine.sh starts has no bridge (it leaves the host's network alone), so a container
shares the host's network: "free host ports" means telling the appliance inside to listen on free ports
(DESKTOP_PORT, TASKS_PORT, UI_PORT), on loopback unless a test wants it as the image ships
(0.0.0.0). X's abstract socket (@/tmp/.X11-unix/X<n>) lives in the network namespace too: the appliance's
Xvfb opens none (-nolisten local), but other X servers of the host do, so the display number is one none of
them uses: `make run`'s :0, the test suite's own Xvfbs (which take the lowest free numbers) and the native e2e
appliance (100-399) all stay below HOST_DISPLAYS.
"""

from __future__ import annotations

import json
import re
import subprocess
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from deskpilot.client.container import (
    HOST_DISPLAYS,
    EngineUnavailable,
    ImageAppliance,
    docker,
    start_engine,
)
from testbed import ROOT

__all__ = [
    "HOST_DISPLAYS",
    "ROOT",
    "VENV",
    "Container",
    "EngineUnavailable",
    "build",
    "docker",
    "start_engine",
]

# Where the README mounts its volumes
HOME = "/home/user"
STATE = "/var/lib/deskpilot"
RUN_DIR = "/run/deskpilot"
TOKEN_FILE = f"{STATE}/token"  # where the appliance keeps the token it generates
VENV = "/opt/deskpilot/.venv"


def build(tag: str, *options: str) -> float:
    """scripts/build-image.sh (what `make image` runs); returns its seconds. Output goes to the terminal."""
    started = time.monotonic()
    subprocess.run([str(ROOT / "scripts" / "build-image.sh"), tag, *options], check=True)
    return time.monotonic() - started


@dataclass
class Container(ImageAppliance):
    """The product's image appliance (what ``deskpilot.sandbox(image=...)`` runs) with the README's two
    named volumes, kept when it stops (a restart reuses them), and the tests' probes."""

    name: str = field(default_factory=lambda: f"deskpilot-test-{uuid.uuid4().hex[:8]}")
    volumes: tuple[str, str] = ("", "")  # home, state: new volumes unless given

    def __post_init__(self) -> None:
        if not all(self.volumes):
            self.volumes = (f"{self.name}-home", f"{self.name}-state")

    def run(self) -> Container:
        """``ImageAppliance.run``, typed as the container it returns."""
        super().run()
        return self

    def options(self) -> list[str]:
        home, state = self.volumes
        return ["-v", f"{home}:{HOME}", "-v", f"{state}:{STATE}"]

    def inspect(self) -> dict[str, Any]:
        return json.loads(docker("inspect", self.name))[0]

    def health(self) -> str:
        """Docker's own health status: starting, healthy or unhealthy."""
        return str(self.inspect()["State"]["Health"]["Status"])

    def wait_health(self, status: str = "healthy", timeout: float = 60) -> float:
        """Poll Docker until the health status is `status`; seconds since `run`."""
        deadline = time.monotonic() + timeout
        while (now := self.health()) != status:
            state = self.inspect()["State"]
            if not state["Running"]:
                raise RuntimeError(f"the container exited ({state['ExitCode']}):\n{self.logs()[-3000:]}")
            if time.monotonic() > deadline:
                raise TimeoutError(f"health {now}, not {status}, after {timeout} s:\n{self.logs()[-3000:]}")
            time.sleep(0.05)
        return time.monotonic() - self.started_at

    def exec(self, *argv: str, user: str = "root", check: bool = True) -> str:
        """A command in the container; as the desktop user with `user="user"` (with the session's DISPLAY and
        the display's cookie)."""
        session = (
            "-w",
            "/",
            "-u",
            user,
            "-e",
            f"DISPLAY={self.display}",
            "-e",
            f"XAUTHORITY={RUN_DIR}/Xauthority",
        )
        return docker("exec", *session, self.name, *argv, check=check)

    def read_token(self) -> str:
        """The token the appliance generated into the state volume; from now on the one this sends."""
        self.token = self.exec("cat", TOKEN_FILE)
        return self.token

    def supervisorctl(self, *args: str) -> str:
        """supervisorctl on the appliance's socket (from /: the config's variables are appliance.sh's)."""
        return self.exec(f"{VENV}/bin/supervisorctl", "-s", f"unix://{RUN_DIR}/supervisor.sock", *args)

    def host_pids(self) -> list[int]:
        """The container's processes, as this host numbers them."""
        return [int(pid) for pid in docker("top", self.name, "-eo", "pid").split()[1:]]

    def host_pid(self, pid: int) -> int:
        """The host's number of the container's process `pid` (the last of NSpid is the container's)."""
        for host in self.host_pids():
            status = Path(f"/proc/{host}/status").read_text()
            nspid = next(line.split()[1:] for line in status.splitlines() if line.startswith("NSpid:"))
            if int(nspid[-1]) == pid:
                return host
        raise LookupError(f"no process {pid} in {self.name}")

    def memory_mib(self) -> float:
        """What `docker stats` reports: the cgroup's memory less its inactive page cache."""
        out = docker("stats", "--no-stream", "--format", "{{.MemUsage}}", self.name)
        m = re.match(r"\s*([\d.]+)\s*([KMG])i?B", out)
        assert m, out
        return float(m.group(1)) * {"K": 1 / 1024, "M": 1, "G": 1024}[m.group(2)]

    def remove(self, volumes: bool = True) -> None:
        docker("rm", "-f", self.name, check=False)
        if volumes:
            docker("volume", "rm", "-f", *self.volumes, check=False)
