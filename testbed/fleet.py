"""A fleet on one machine: native appliances (each its display, ports, home and worker) and API-only task
services, all on one PostgreSQL database, as the chart's fleet runs them in pods: the desktops' StatefulSet
(scripts/appliance.sh under supervisord) and the API Deployment (uvicorn on deskpilot.tasks.app with
TASKS_WORKER_ENABLED=false). The model is the scripted one; everything speaks real HTTP with one token."""

from __future__ import annotations

import contextlib
import os
import secrets
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import psutil

from deskpilot.client.native import free_displays
from deskpilot.scripted import ScriptedModel
from testbed import ROOT
from testbed.appliance import Appliance, model_settings
from testbed.net import free_port


@dataclass
class TaskAPI:
    """One API-only task service process (the chart's `tasks` container)."""

    db_url: str
    token: str
    port: int = field(default_factory=free_port)
    proc: subprocess.Popen[bytes] | None = None
    log: Path = field(
        default_factory=lambda: Path(tempfile.mkstemp(prefix="deskpilot-api-", suffix=".log")[1])
    )

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def ws_url(self) -> str:
        return f"ws://127.0.0.1:{self.port}/ws"

    def start(self) -> TaskAPI:
        keep = ("PATH", "LANG", "HOME", "TMPDIR")
        env = {k: v for k, v in os.environ.items() if k in keep}
        env |= {"DATABASE_URL": self.db_url, "TASKS_WORKER_ENABLED": "false", "DESKPILOT_TOKEN": self.token}
        argv = [sys.executable, "-m", "uvicorn", "--factory", "deskpilot.tasks.app:create_app"]
        argv += ["--host", "127.0.0.1", "--port", str(self.port), "--no-access-log"]
        with self.log.open("wb") as log:
            self.proc = subprocess.Popen(argv, env=env, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 30
        while True:
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(f"{self.url}/health", timeout=1).status_code == 200:
                    return self
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"task API did not start:\n{self.log.read_text(errors='replace')[-3000:]}")
            time.sleep(0.1)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.unlink(missing_ok=True)


@dataclass
class Fleet:
    db_url: str
    token: str
    desktops: dict[str, Appliance]
    apis: list[TaskAPI]

    @property
    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"}

    def client(self, api: int = 0) -> httpx.Client:
        return httpx.Client(base_url=self.apis[api].url, headers=self.headers, timeout=30)

    def kill(self, name: str) -> None:
        """The desktop dies at once (a node lost): SIGKILL to everything its supervisord session runs."""
        appliance = self.desktops[name]
        assert appliance.proc is not None
        session = appliance.proc.pid
        for p in psutil.process_iter():
            with contextlib.suppress(psutil.Error, ProcessLookupError):
                if os.getsid(p.pid) == session:
                    p.send_signal(signal.SIGKILL)
        appliance.proc.wait(timeout=10)


def desktop_settings(name: str, db_url: str, model: ScriptedModel, lease_seconds: float) -> dict[str, str]:
    fleet = {"DATABASE_URL": db_url, "TASKS_DESKTOP_NAME": name, "TASKS_LEASE_SECONDS": str(lease_seconds)}
    return model_settings(model) | fleet


@contextlib.contextmanager
def fleet(
    db_url: str, model: ScriptedModel, names: list[str], apis: int = 2, lease_seconds: float = 3.0
) -> Iterator[Fleet]:
    """``names`` desktops and ``apis`` API-only services on ``db_url``, ready; all stopped on exit."""
    token = secrets.token_urlsafe(32)
    # distinct numbers from one pass: each appliance picking its own, none started yet, two could get the same
    displays = free_displays()
    desktops = {
        name: Appliance(
            token=token,
            settings=desktop_settings(name, db_url, model, lease_seconds),
            display=f":{next(displays)}",
        )
        for name in names
    }
    services = [TaskAPI(db_url, token) for _ in range(apis)]
    try:
        # the first start applies the migrations: one API first, then everything else side by side
        if services:
            services[0].start()
        with ThreadPoolExecutor(len(names) + len(services)) as pool:
            for appliance in desktops.values():
                appliance.start()
            list(pool.map(lambda a: a.wait_ready(), desktops.values()))
            list(pool.map(TaskAPI.start, services[1:]))
        yield Fleet(db_url, token, desktops, services)
    finally:
        with ThreadPoolExecutor(len(names) + len(services)) as pool:
            list(pool.map(TaskAPI.stop, services))
            list(pool.map(lambda a: a.shutdown(), desktops.values()))
