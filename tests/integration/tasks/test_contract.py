"""The contract's models read the task service's answers and write them back byte for byte the same JSON:
the UI renders what the typed client read, and its pages' scripts compare timestamps as strings."""

from __future__ import annotations

import base64
from typing import Any

import httpx
from pydantic import TypeAdapter

from deskpilot.taskapi.types import MessageOut, TaskDetail, TaskOut


def test_the_contract_writes_back_what_the_service_answered(api: httpx.Client) -> None:
    files = [{"name": "notes.txt", "data": base64.b64encode(b"hello").decode()}]
    body = {"description": "round trip", "files": files, "scheduledFor": "2031-01-02T03:04:05.6+01:00"}
    created = api.post("/tasks", json={**body, "type": "SCHEDULED", "priority": "HIGH"}).json()
    api.post(f"/tasks/{created['id']}/messages", json={"content": "and a reply"})
    detail = api.get(f"/tasks/{created['id']}").json()
    assert detail["files"] and len(detail["messages"]) == 2 and detail["scheduledFor"]
    listed = api.get("/tasks").json()
    messages = api.get(f"/tasks/{created['id']}/messages").json()
    models: list[tuple[TypeAdapter[Any], Any]] = [
        (TypeAdapter(TaskDetail), detail),
        (TypeAdapter(list[TaskOut]), listed),
        (TypeAdapter(list[MessageOut]), messages),
    ]
    for model, answer in models:
        assert model.dump_python(model.validate_python(answer), mode="json", by_alias=True) == answer
