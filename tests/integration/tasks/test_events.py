"""WebSocket /ws events received by a real client over loopback."""

from __future__ import annotations

import json

import pytest
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import connect

from testbed.task_service import TaskApi, serve
from tests.integration.tasks.executors import ScriptedExecutor


def recv(ws, timeout: float = 5.0) -> dict:
    return json.loads(ws.recv(timeout=timeout))


def recv_until(ws, event: str, pred=lambda d: True, timeout: float = 5.0) -> dict:
    while True:
        frame = recv(ws, timeout)
        if frame["event"] == event and pred(frame["data"]):
            return frame["data"]


def test_every_event_reaches_an_unsubscribed_client(api: TaskApi) -> None:
    with connect(api.ws_url) as ws:
        t = api.post("/tasks", json={"description": "watch me"}).json()
        created = recv(ws)
        assert created == {"event": "task_created", "data": t}
        first = recv(ws)
        assert first["event"] == "new_message" and first["data"]["taskId"] == t["id"]
        api.patch(f"/tasks/{t['id']}", json={"priority": "HIGH"})
        updated = recv(ws)
        assert updated["event"] == "task_updated" and updated["data"]["priority"] == "HIGH"
        assert "messages" not in updated["data"]
        m = api.post(f"/tasks/{t['id']}/messages", json={"content": "faster"}).json()
        assert recv(ws) == {"event": "new_message", "data": m}
        api.delete(f"/tasks/{t['id']}")
        assert recv(ws) == {"event": "task_deleted", "data": {"id": t["id"]}}


def test_per_task_subscription_by_query_and_by_message(api: TaskApi) -> None:
    a = api.post("/tasks", json={"description": "a"}).json()["id"]
    b = api.post("/tasks", json={"description": "b"}).json()["id"]
    with connect(f"{api.ws_url}?taskId={a}") as only_a, connect(api.ws_url) as later:
        later.send(json.dumps({"action": "subscribe", "taskId": b}))
        assert recv(later) == {"event": "subscribed", "data": {"taskIds": [b]}}
        api.patch(f"/tasks/{b}", json={"priority": "LOW"})
        api.patch(f"/tasks/{a}", json={"priority": "URGENT"})
        got_a = recv(only_a)
        assert got_a["event"] == "task_updated" and got_a["data"]["id"] == a
        got_b = recv(later)
        assert got_b["event"] == "task_updated" and got_b["data"]["id"] == b
        api.post(f"/tasks/{a}/messages", json={"content": "for a"})
        assert recv(only_a)["data"]["taskId"] == a
        later.send(json.dumps({"action": "unsubscribe"}))
        assert recv(later) == {"event": "subscribed", "data": {"taskIds": []}}
        api.patch(f"/tasks/{a}", json={"priority": "LOW"})
        assert recv(later)["data"]["id"] == a  # back to everything
        assert recv(only_a)["data"]["priority"] == "LOW"


def test_a_connection_can_ask_for_some_kinds_of_events_only(api: TaskApi) -> None:
    with connect(f"{api.ws_url}?events=task_created,task_deleted") as ws:
        t = api.post("/tasks", json={"description": "no messages please"}).json()
        assert recv(ws) == {"event": "task_created", "data": t}
        api.patch(f"/tasks/{t['id']}", json={"priority": "HIGH"})
        api.post(f"/tasks/{t['id']}/messages", json={"content": "not for this socket"})
        api.delete(f"/tasks/{t['id']}")
        assert recv(ws) == {"event": "task_deleted", "data": {"id": t["id"]}}  # nothing in between


def test_an_unknown_kind_of_event_closes_the_socket_with_the_kinds(api: TaskApi) -> None:
    url = f"{api.ws_url}?events=task_created,screenshots"
    with connect(url) as ws, pytest.raises(ConnectionClosed) as closed:
        ws.recv(timeout=5)
    assert closed.value.rcvd is not None and closed.value.rcvd.code == 1008
    assert closed.value.rcvd.reason == (
        "unknown events screenshots; events are task_created, task_updated, task_deleted, new_message"
    )


def test_the_worker_announces_progress(db_url: str) -> None:
    with (
        serve(db_url, ScriptedExecutor(), worker_enabled=True, poll_seconds=60) as api,
        connect(api.ws_url) as ws,
    ):
        task_id = api.post("/tasks", json={"description": "complete"}).json()["id"]
        recv_until(ws, "task_updated", lambda d: d["id"] == task_id and d["status"] == "IN_PROGRESS")
        msg = recv_until(ws, "new_message", lambda d: d["role"] == "ASSISTANT")
        assert msg["content"] == [{"type": "text", "text": "done"}]
        done = recv_until(ws, "task_updated", lambda d: d["status"] == "COMPLETED")
        assert done["id"] == task_id and done["result"] == {"ok": True}
