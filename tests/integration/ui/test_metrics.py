"""``GET /metrics`` of the UI over real HTTP, in front of a real task service: behind the token (or a
session), clean for promtool, each request counted by the route template it matched and its status (the
guard's refusals and unknown paths as ``unmatched``), never by its raw path."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import httpx
import pytest

from deskpilot.config import MetricsSettings, SecuritySettings, UISettings
from deskpilot.ui.server import create_app
from testbed.metrics import families, label_values, scrape, value
from testbed.net import ServerThread
from testbed.security import BEARER, TOKEN
from testbed.task_service import serve

REQUESTS = "deskpilot_http_requests_total"


@dataclass
class UI:
    url: str
    task_id: str


@pytest.fixture(scope="module")
def ui(tmp_path_factory: pytest.TempPathFactory) -> Iterator[UI]:
    db = tmp_path_factory.mktemp("ui-metrics") / "agent.db"
    with serve(f"sqlite:///{db}") as tasks:
        task_id = tasks.post("/tasks", json={"description": "counted"}).json()["id"]
        settings = UISettings(tasks_url=str(tasks.base_url), desktop_url="http://127.0.0.1:9")
        with ServerThread(create_app(settings, SecuritySettings(token=TOKEN))) as server:
            yield UI(server.url, task_id)


def test_metrics_want_the_token_or_a_session(ui: UI) -> None:
    for credentials in ({}, {"Authorization": "Bearer wrong"}):
        r = httpx.get(f"{ui.url}/metrics", headers=credentials)
        assert r.status_code == 401, r.text
        assert "deskpilot_" not in r.text
    assert httpx.get(f"{ui.url}/metrics", headers=BEARER).status_code == 200
    with httpx.Client(base_url=ui.url) as browser:
        assert browser.post("/login", data={"token": TOKEN, "next": "/"}).status_code == 303
        assert browser.get("/metrics").status_code == 200


def test_requests_are_counted_by_route_template(ui: UI) -> None:
    with httpx.Client(base_url=ui.url, headers=BEARER, timeout=30) as client:
        assert client.get("/").status_code == 200
        assert client.get(f"/tasks/{ui.task_id}").status_code == 200
        assert client.get(f"/api/tasks/{ui.task_id}").status_code == 200
        assert client.get("/static/app.css").status_code == 200
        assert client.get(f"/no-such-page/{ui.task_id}").status_code == 404
        assert httpx.get(f"{ui.url}/tasks/{ui.task_id}").status_code == 401  # refused: no route reached
        scrape(client)
        text = scrape(client)
    assert families(text)[REQUESTS.removesuffix("_total")] == "counter"
    assert (value(text, REQUESTS, route="/", code="200") or 0) >= 1
    assert (value(text, REQUESTS, route="/tasks/{task_id}", code="200") or 0) >= 1
    assert (value(text, REQUESTS, route="/api/{path:path}", code="200") or 0) >= 1
    assert (value(text, REQUESTS, route="/static", code="200") or 0) >= 1
    assert (value(text, REQUESTS, route="/metrics", code="200") or 0) >= 1  # a plain route, not FastAPI's own
    assert (value(text, REQUESTS, route="unmatched", code="404") or 0) >= 1
    assert (value(text, REQUESTS, route="unmatched", code="401") or 0) >= 1
    assert ui.task_id not in text and "no-such-page" not in text
    assert all(
        route == "unmatched" or route.startswith("/") for route in label_values(text, REQUESTS, "route")
    )
    assert value(text, "process_resident_memory_bytes") is not None


def test_metrics_off(ui: UI) -> None:
    settings = UISettings(tasks_url="http://127.0.0.1:9", desktop_url="http://127.0.0.1:9")
    app = create_app(settings, SecuritySettings(token=TOKEN), MetricsSettings(metrics="off"))
    with ServerThread(app) as server:
        assert httpx.get(f"{server.url}/metrics", headers=BEARER).status_code == 404
