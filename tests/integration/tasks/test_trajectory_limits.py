"""The trajectory's cap and retention on a real service and database: an archive past
TASKS_TRAJECTORY_MAX_BYTES is served truncated and says so (never a 500); past
TASKS_TRAJECTORY_RETENTION_DAYS a finished task's trajectory answers 410 and the sweep drops its frames
from the conversation, once, leaving the task and its text."""

from __future__ import annotations

import base64
import io
import zipfile
from datetime import timedelta
from typing import Any

import orjson
from PIL import Image

from deskpilot.taskapi.types import Role
from deskpilot.tasks.models import Task, utcnow
from deskpilot.tasks.retention import DROPPED, drop_expired_frames
from deskpilot.tasks.store import Store
from testbed.task_service import serve, with_store


def png(colour: tuple[int, int, int]) -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (1280, 720), colour).save(out, "PNG")
    return out.getvalue()


def image(data: bytes) -> dict[str, Any]:
    source = {"type": "base64", "media_type": "image/png", "data": base64.b64encode(data).decode()}
    return {"type": "image", "source": source}


def recorded_task(db_url: str, frames: list[bytes], days_ago: float = 0) -> str:
    """A CANCELLED task whose conversation has a move per frame, last changed ``days_ago``."""

    async def make(store: Store) -> str:
        task = await store.create_task("move around")
        for n, frame in enumerate(frames):
            use = {"type": "tool_use", "id": f"c{n}", "name": "computer_move_mouse", "input": {"x": n}}
            result = {"type": "tool_result", "tool_use_id": f"c{n}", "content": [image(frame)]}
            await store.add_message(task.id, [use], role=Role.ASSISTANT)
            await store.add_message(task.id, [result], role=Role.USER, requeue=False)
        await store.update_task(task.id, status="CANCELLED")
        async with store.writing() as session:
            row = await session.get(Task, task.id)
            assert row is not None
            row.updated_at = utcnow() - timedelta(days=days_ago)
        return task.id

    return with_store(db_url, make)


def header_and_steps(body: bytes) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    with zipfile.ZipFile(io.BytesIO(body)) as z:
        header, *steps = [orjson.loads(line) for line in z.read("trajectory.jsonl").splitlines()]
    return header, steps


def results_of(task: dict[str, Any]) -> list[dict[str, Any]]:
    blocks = [b for m in task["messages"] for b in m["content"]]
    return [b for b in blocks if b["type"] == "tool_result"]


def test_an_archive_past_the_cap_is_served_truncated(db_url: str) -> None:
    frames = [png((200, 0, 0)), png((0, 200, 0)), png((0, 0, 200))]
    cap = len(frames[0]) + 2000  # the first frame and the step lines, not the second frame
    with serve(db_url, trajectory_max_bytes=cap) as api:
        task_id = recorded_task(db_url, frames)
        r = api.get(f"/tasks/{task_id}/trajectory")
        assert r.status_code == 200, r.text
        header, steps = header_and_steps(r.content)
        assert header["truncated"] == {"atStep": 2, "maxBytes": cap, "framesLeftOut": 2, "stepsLeftOut": 0}
        assert [bool(s["frameAfter"]) for s in steps] == [True, False, False] and header["steps"] == 3
        # so small that not even the steps fit: still an archive, which says so
    with serve(db_url, trajectory_max_bytes=1) as api:
        header, steps = header_and_steps(api.get(f"/tasks/{task_id}/trajectory").content)
        assert (header["steps"], steps) == (0, [])
        assert header["truncated"] == {"atStep": 1, "maxBytes": 1, "framesLeftOut": 3, "stepsLeftOut": 3}
    with serve(db_url) as api:  # the default cap: the whole trajectory
        assert header_and_steps(api.get(f"/tasks/{task_id}/trajectory").content)[0]["truncated"] is None


def test_past_retention_a_trajectory_is_neither_served_nor_kept(db_url: str) -> None:
    frames = [png((200, 0, 0)), png((0, 200, 0))]
    with serve(db_url, trajectory_retention_days=2) as api:
        fresh = recorded_task(db_url, frames, days_ago=1)
        old = recorded_task(db_url, frames, days_ago=3)
        assert api.get(f"/tasks/{fresh}/trajectory").status_code == 200
        r = api.get(f"/tasks/{old}/trajectory")
        assert r.status_code == 410, r.text
        body = r.json()
        assert (body["statusCode"], body["error"]) == (410, "Gone")
        assert body["message"].startswith("trajectory:")
        assert "TASKS_TRAJECTORY_RETENTION_DAYS" in body["message"]

        # the sweep drops the old task's frames, once; the fresh task keeps its own
        assert with_store(db_url, lambda store: drop_expired_frames(store, 2)) == 2
        assert with_store(db_url, lambda store: drop_expired_frames(store, 2)) == 0
        detail = api.get(f"/tasks/{old}")
        assert detail.status_code == 200
        assert [r["content"] for r in results_of(detail.json())] == [[{"type": "text", "text": DROPPED}]] * 2
        kept = results_of(api.get(f"/tasks/{fresh}").json())
        assert [r["content"][0]["type"] for r in kept] == ["image", "image"]
        # without retention, the task is served again: the steps, their frames gone
    with serve(db_url) as api:
        header, steps = header_and_steps(api.get(f"/tasks/{old}/trajectory").content)
        assert header["steps"] == 2 and all(s["frameAfter"] is None for s in steps)
