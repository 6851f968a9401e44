"""``GET /metrics`` of the task service over real HTTP, with its real worker running tasks on SQLite and
PostgreSQL: behind the token, clean for promtool, the tasks by status read from the database, queue waits and
runs measured, WebSocket clients and the fleet's desktops counted, model names bounded."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest
from websockets.sync.client import connect

from deskpilot.config import MetricsSettings
from deskpilot.metrics import MAX_FREE_VALUES
from deskpilot.taskapi.types import DesktopState, TaskStatus
from deskpilot.tasks.app import create_app
from deskpilot.tasks.executor import TaskContext
from testbed.metrics import families, label_values, scrape, value
from testbed.net import ServerThread
from testbed.security import BEARER, TOKEN, security, with_token
from testbed.task_service import serve, settings_for
from testbed.timing import wait_until

FAMILIES = {
    "deskpilot_tasks": "gauge",
    "deskpilot_task_duration_seconds": "histogram",
    "deskpilot_queue_wait_seconds": "histogram",
    "deskpilot_model_call_duration_seconds": "histogram",
    "deskpilot_model_tokens": "counter",
    "deskpilot_ws_clients": "gauge",
    "deskpilot_desktops": "gauge",
    "process_cpu_seconds": "counter",
}


class MeteredExecutor:
    """Reports model calls through the task context as the agent loop does: ``calls N`` reports N calls of N
    different models (each 100 prompt and 20 completion tokens), then completes; ``help`` asks for help."""

    async def execute(self, task_id: str, ctx: TaskContext) -> None:
        task = await ctx.task()
        word, _, rest = task.description.partition(" ")
        if word == "help":
            await ctx.update(status=TaskStatus.NEEDS_HELP)
            return
        for n in range(int(rest or 1)):
            ctx.model_call(f"proxy/model-{n}", "ok", 0.2, (100, 20))
        ctx.model_call("proxy/model-0", "transient", 1.5)
        await ctx.update(status=TaskStatus.COMPLETED)


@pytest.fixture
def service(db_url: str) -> Iterator[httpx.Client]:
    """The service with its worker (its desktop answers nothing: the fleet sees it unhealthy), the token."""
    with serve(db_url, MeteredExecutor(), with_token(), worker_enabled=True, poll_seconds=0.2) as client:
        client.headers.update(BEARER)
        yield client


def run(client: httpx.Client, description: str, status: str) -> None:
    task_id = client.post("/tasks", json={"description": description}).json()["id"]
    wait_until(lambda: client.get(f"/tasks/{task_id}").json()["status"] == status, 20, what=status)


def test_metrics_want_the_token(service: httpx.Client) -> None:
    for credentials in ({}, {"Authorization": "Bearer wrong"}):
        r = httpx.get(service.base_url.join("/metrics"), headers=credentials)
        assert r.status_code == 401 and r.headers["www-authenticate"].startswith("Bearer"), r.text
        assert "deskpilot_" not in r.text
    assert service.get("/metrics").status_code == 200


def test_tasks_runs_models_clients_and_desktops(service: httpx.Client) -> None:
    run(service, "calls 2", "COMPLETED")
    run(service, "help", "NEEDS_HELP")
    later = {"description": "later", "type": "SCHEDULED", "scheduledFor": "2999-01-01T00:00:00Z"}
    assert service.post("/tasks", json=later).status_code == 201
    with connect(service.ws_url, additional_headers=BEARER):  # type: ignore[attr-defined]
        wait_until(lambda: value(scrape(service), "deskpilot_ws_clients") == 1, 5, what="one client")
        text = scrape(service)
    assert FAMILIES.items() <= families(text).items()
    assert value(text, "deskpilot_tasks", status="COMPLETED") == 1
    assert value(text, "deskpilot_tasks", status="NEEDS_HELP") == 1
    assert value(text, "deskpilot_tasks", status="PENDING") == 1
    assert label_values(text, "deskpilot_tasks", "status") == set(TaskStatus)
    assert value(text, "deskpilot_task_duration_seconds_count", outcome="completed") == 1
    assert value(text, "deskpilot_task_duration_seconds_count", outcome="needs_help") == 1
    assert value(text, "deskpilot_queue_wait_seconds_count") == 2  # the scheduled one is not due
    assert (value(text, "deskpilot_queue_wait_seconds_sum") or 0) < 5
    call = "deskpilot_model_call_duration_seconds_count"
    assert value(text, call, model="proxy/model-0", outcome="ok") == 1
    assert value(text, call, model="proxy/model-0", outcome="transient") == 1
    assert value(text, "deskpilot_model_tokens_total", model="proxy/model-1", kind="prompt") == 100
    assert value(text, "deskpilot_model_tokens_total", model="proxy/model-1", kind="completion") == 20
    assert value(text, "deskpilot_desktops", state=DesktopState.UNHEALTHY) == 1
    assert label_values(text, "deskpilot_desktops", "state") == set(DesktopState)
    wait_until(lambda: value(scrape(service), "deskpilot_ws_clients") == 0, 5, what="no client")


def test_model_names_are_bounded(service: httpx.Client) -> None:
    run(service, f"calls {MAX_FREE_VALUES + 20}", "COMPLETED")
    text = scrape(service)
    models = label_values(text, "deskpilot_model_call_duration_seconds_count", "model")
    assert len(models) == MAX_FREE_VALUES + 1 and "other" in models
    assert value(text, "deskpilot_model_call_duration_seconds_count", model="other", outcome="ok") == 20
    assert TOKEN not in text


def test_metrics_off(db_url: str) -> None:
    app = create_app(
        settings_for(db_url), security=security(), metrics_settings=MetricsSettings(metrics="off")
    )
    with ServerThread(app) as server, httpx.Client(base_url=server.url) as client:
        assert client.get("/metrics").status_code == 404
        assert client.post("/tasks", json={"description": "no metrics"}).status_code == 201
