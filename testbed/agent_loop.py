"""The task service with its real worker and the agent loop, on real HTTP, against the real desktop
service and the scripted LLM."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator, Set
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from deskpilot.agent.executor import AgentExecutor
from deskpilot.config import MODEL_VARIABLES, PROVIDERS, AgentSettings, TaskSettings
from deskpilot.tasks.app import create_app
from testbed import ROOT
from testbed.groups import stop_group
from testbed.net import ServerThread, free_port, wait_http

# Statuses a run ends in.
SETTLED = {"NEEDS_HELP", "NEEDS_REVIEW", "COMPLETED", "FAILED", "CANCELLED"}


@dataclass(frozen=True)
class LoopSettings:
    """The task service's settings and the agent loop's, for one test."""

    tasks: TaskSettings
    agent: AgentSettings


def loop_settings(
    db_path: Path, desktop_url: str, llm_base_url: str | None, files_dir: Path, **overrides: Any
) -> LoopSettings:
    """Settings that ignore the machine's environment: only the scripted LLM (or what overrides say),
    uploads saved in `files_dir` (the desktop service's own files directory, never the real ~/Desktop).
    Each override goes to the settings that have the field (the desktop URL to both)."""
    tasks: dict[str, Any] = {
        "database_url": f"sqlite:///{db_path}",
        "desktop_url": desktop_url,
        "desktop_files_dir": str(files_dir),
        "lease_seconds": 10.0,
        "poll_seconds": 0.5,
    }
    agent: dict[str, Any] = {
        "desktop_url": desktop_url,
        # provider: the scripted server as the local OpenAI-compatible one; nothing else
        "model": "local/scripted" if llm_base_url else None,
        "openai_base_url": llm_base_url,
        "openai_base_model": "scripted",
        "anthropic_api_key": None,
        "openai_api_key": None,
        "gemini_api_key": None,
        "openrouter_api_key": None,
        "llm_proxy_url": None,
        "llm_proxy_key": None,
        "llm_retries": 1,
        "llm_backoff": 0.01,
        "context_window": None,
    }
    for key, value in overrides.items():
        if key in TaskSettings.model_fields:
            tasks[key] = value
        if key in AgentSettings.model_fields or key not in TaskSettings.model_fields:
            agent[key] = value
    return LoopSettings(TaskSettings(**tasks), AgentSettings(**agent))


@dataclass
class Agent:
    client: httpx.Client
    settings: LoopSettings
    app: Any

    def create(self, description: str, **fields: Any) -> dict[str, Any]:
        r = self.client.post("/tasks", json={"description": description, **fields})
        assert r.status_code == 201, r.text
        return r.json()

    def task(self, task_id: str) -> dict[str, Any]:
        r = self.client.get(f"/tasks/{task_id}")
        assert r.status_code == 200, r.text
        return r.json()

    def wait(self, task_id: str, statuses: Set[str] | str = frozenset(SETTLED), timeout: float = 60) -> dict:
        """Poll until the task is in one of `statuses`; its detail (with messages) is returned."""
        want = {statuses} if isinstance(statuses, str) else set(statuses)
        deadline = time.monotonic() + timeout
        while True:
            # the list has no messages: polling it does not load every screenshot of the task each time
            r = self.client.get("/tasks", params={"limit": 1000})
            task = next(t for t in r.json() if t["id"] == task_id)
            if task["status"] in want:
                return self.task(task_id)
            if time.monotonic() > deadline:
                raise TimeoutError(
                    f"task {task_id} is {task['status']}, not {want}: error={task.get('error')}"
                )
            time.sleep(0.05)

    def say(self, task_id: str, content: str) -> dict[str, Any]:
        r = self.client.post(f"/tasks/{task_id}/messages", json={"content": content})
        assert r.status_code == 201, r.text
        return r.json()


@contextlib.contextmanager
def serve_agent(settings: LoopSettings, executor: Any = None) -> Iterator[Agent]:
    """The task service with its worker; the agent loop unless another `executor` is given."""
    app = create_app(settings.tasks, executor=executor or AgentExecutor(settings.agent))
    with ServerThread(app) as server, httpx.Client(base_url=server.url, timeout=30) as client:
        yield Agent(client, settings, app)


def desktop_action(desktop_url: str, action: str, **fields: Any) -> httpx.Response:
    return httpx.post(f"{desktop_url}/computer-use", json={"action": action, **fields}, timeout=30)


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def blocks(task: dict[str, Any], role: str | None = None) -> list[dict[str, Any]]:
    return [b for m in task["messages"] if role is None or m["role"] == role for b in m["content"]]


@dataclass
class ServiceProcess:
    """The task service in a process of its own, started as the appliance starts it."""

    url: str
    log: Path  # its stderr: the service's log lines

    def log_lines(self) -> list[str]:
        return self.log.read_text().splitlines()


@contextlib.contextmanager
def service_process(
    tmp_path: Path, *, environment: dict[str, str] | None = None, **variables: str
) -> Iterator[ServiceProcess]:
    """``uvicorn --factory deskpilot.tasks.app:create_app`` with these AGENT_* variables (names without the
    prefix, e.g. ``openai_base_url=...``) and none of the machine's own model or OpenTelemetry settings;
    ``environment``: other variables, as named (``OTEL_EXPORTER_OTLP_ENDPOINT``, ``DESKPILOT_TOKEN``)."""
    ours = {*MODEL_VARIABLES, *(p.model_var for p in PROVIDERS), "DATABASE_URL"}
    own = ("AGENT_", "DESKPILOT_LOG", "OTEL_")
    env = {k: v for k, v in os.environ.items() if k not in ours and not k.startswith(own)}
    env.update({f"AGENT_{k.upper()}": v for k, v in variables.items()})
    env.update(environment or {})
    port = free_port()
    log = tmp_path / f"service-{port}.log"
    argv = [
        sys.executable,
        "-m",
        "uvicorn",
        "--factory",
        "deskpilot.tasks.app:create_app",
        "--port",
        str(port),
    ]
    with log.open("wb") as stderr:
        proc = subprocess.Popen(
            argv, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=stderr, start_new_session=True
        )
    try:
        wait_http(f"http://127.0.0.1:{port}/health", timeout=60)
        yield ServiceProcess(f"http://127.0.0.1:{port}", log)
    finally:
        stop_group(proc, timeout=15)
