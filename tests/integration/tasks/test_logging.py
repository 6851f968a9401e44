"""Each step of a task's life is one log line with its fields, on both backends: created, claimed (or
reclaimed after a lease ran out), status changes, finished (with the error when FAILED), cancelled,
handed back by a stopping worker, deleted."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import httpx
import pytest

from deskpilot.tasks.leases import Leases
from deskpilot.tasks.store import Store
from testbed.task_service import serve
from testbed.timing import wait_until
from tests.integration.tasks.executors import ScriptedExecutor


def lines(caplog: pytest.LogCaptureFixture, task_id: str) -> list[dict[str, Any]]:
    """The task's lifecycle lines: each record's fields, with its ``message`` and ``level``."""
    return [
        {**vars(r), "message": r.getMessage(), "level": r.levelname}
        for r in caplog.records
        if r.name == "deskpilot.tasks.lifecycle" and getattr(r, "task", None) == task_id
    ]


def messages(caplog: pytest.LogCaptureFixture, task_id: str) -> list[str]:
    return [line["message"] for line in lines(caplog, task_id)]


def post(api: httpx.Client, description: str, **fields: str) -> str:
    r = api.post("/tasks", json={"description": description, **fields})
    assert r.status_code == 201, r.text
    return str(r.json()["id"])


def status(api: httpx.Client, task_id: str) -> str:
    return str(api.get(f"/tasks/{task_id}").json()["status"])


def test_a_tasks_life_is_logged_with_its_fields(db_url: str, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)
    with serve(db_url, ScriptedExecutor(), worker_enabled=True, poll_seconds=60) as api:
        worker = api.app.state.tasks.worker.worker_id
        done = post(api, "complete it", priority="HIGH")
        wait_until(lambda: status(api, done) == "COMPLETED")
        failed = post(api, "raise it")
        wait_until(lambda: status(api, failed) == "FAILED")
        stopped = post(api, "block until cancelled")
        wait_until(lambda: status(api, stopped) == "IN_PROGRESS")
        assert api.patch(f"/tasks/{stopped}", json={"status": "CANCELLED"}).status_code == 200
        assert api.patch(f"/tasks/{stopped}", json={"status": "PENDING"}).status_code == 200  # run again
        wait_until(lambda: status(api, stopped) == "IN_PROGRESS")
        assert api.delete(f"/tasks/{done}").status_code == 204
    # the service stopped while `stopped` ran: its worker handed it back

    assert messages(caplog, done) == ["task created", "task claimed", "task finished", "task deleted"]
    created, claimed, finished, deleted = lines(caplog, done)
    assert (created["status"], created["priority"], created["level"]) == ("PENDING", "HIGH", "INFO")
    assert (claimed["status"], claimed["worker"], claimed["previous"]) == ("IN_PROGRESS", worker, "PENDING")
    assert (finished["status"], finished["worker"], finished["previous"]) == (
        "COMPLETED",
        worker,
        "IN_PROGRESS",
    )
    assert finished["duration_s"] >= 0 and "error" not in finished
    assert deleted["status"] == "COMPLETED"

    fail = lines(caplog, failed)[-1]
    assert (fail["message"], fail["status"], fail["error"]) == (
        "task finished",
        "FAILED",
        "RuntimeError: boom",
    )

    assert messages(caplog, stopped) == [
        "task created",
        "task claimed",
        "task cancelled",
        "task status changed",  # run again
        "task claimed",
        "task handed back unfinished: its worker is stopping",
    ]
    cancelled, requeued = lines(caplog, stopped)[2:4]
    assert (cancelled["status"], cancelled["previous"], cancelled["worker"]) == (
        "CANCELLED",
        "IN_PROGRESS",
        worker,
    )
    assert cancelled["duration_s"] >= 0
    assert (requeued["status"], requeued["previous"]) == ("PENDING", "CANCELLED")


def test_a_task_reclaimed_after_its_lease_ran_out_is_a_warning(
    db_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)

    async def reclaim() -> str:
        store = await Store.open(db_url)
        try:
            task = await store.create_task("outlives its worker")
            await Leases(store).claim_next("dead-worker", 0.05)
            await asyncio.sleep(0.1)  # the dead worker renews nothing: its lease runs out
            await Leases(store).claim_next("live-worker", 60)
            return task.id
        finally:
            await store.close()

    reclaimed = lines(caplog, asyncio.run(reclaim()))[-1]
    assert reclaimed["level"] == "WARNING" and "lease" in reclaimed["message"]
    assert (reclaimed["worker"], reclaimed["previous_worker"]) == ("live-worker", "dead-worker")
