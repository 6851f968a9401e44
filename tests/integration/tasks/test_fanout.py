"""Two task services on one PostgreSQL: a change made through one reaches the other's /ws, in order, once;
each sees its own changes once. SQLite is one process's database: nothing fans out."""

from __future__ import annotations

import json
import time

import pytest
from websockets.sync.client import connect

from testbed.postgres import PostgresServer
from testbed.task_service import listening, serve


def frames(ws, n: int, timeout: float = 10) -> list[dict]:
    out: list[dict] = []
    deadline = time.monotonic() + timeout
    while len(out) < n:
        out.append(json.loads(ws.recv(timeout=max(0.01, deadline - time.monotonic()))))
    return out


def quiet(ws, seconds: float = 0.5) -> list[dict]:
    """Whatever else arrives within ``seconds``."""
    extra = []
    with pytest.raises(TimeoutError):
        while True:
            extra.append(json.loads(ws.recv(timeout=seconds)))
    return extra


@pytest.mark.postgres
def test_a_change_through_one_service_reaches_the_others_socket(pg_server: PostgresServer) -> None:
    url = pg_server.create_database()
    with serve(url) as a, serve(url) as b:
        listening(a)
        listening(b)
        with connect(b.ws_url) as on_b, connect(a.ws_url) as on_a:
            task = a.post("/tasks", json={"description": "fan out"}).json()
            seen = frames(on_b, 2)
            assert a.patch(f"/tasks/{task['id']}", json={"priority": "HIGH"}).status_code == 200
            seen += frames(on_b, 1)
            assert a.delete(f"/tasks/{task['id']}").status_code == 204
            seen += frames(on_b, 1)
            kinds = ["task_created", "new_message", "task_updated", "task_deleted"]
            assert [f["event"] for f in seen] == kinds
            assert seen[0]["data"]["id"] == task["id"] and seen[0]["data"]["description"] == "fan out"
            assert seen[1]["data"]["taskId"] == task["id"]
            assert seen[2]["data"]["priority"] == "HIGH"
            assert seen[3]["data"] == {"id": task["id"]}
            assert [f["event"] for f in frames(on_a, 4)] == [f["event"] for f in seen]
            assert quiet(on_a) == [] and quiet(on_b) == [], "each event once"


def test_sqlite_has_nothing_to_fan_out(tmp_path) -> None:
    with serve(f"sqlite:///{tmp_path}/a.db") as a:
        assert a.app.state.fanout is None
