"""The worker inside the running service: event-driven start, one task at a time, executor outcomes,
cancellation, takeover, re-queue on reply, schedules. Real HTTP, both backends."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta

import httpx
import pytest

from deskpilot.config import MODEL_VARIABLES, TaskSettings, no_model_message
from deskpilot.tasks.executor import UNAVAILABLE, load_executor
from testbed.task_service import serve
from testbed.timing import wait_until
from tests.integration.tasks.executors import ScriptedExecutor


def status(api: httpx.Client, task_id: str) -> str:
    return api.get(f"/tasks/{task_id}").json()["status"]


def post(api: httpx.Client, description: str, **fields) -> str:
    r = api.post("/tasks", json={"description": description, **fields})
    assert r.status_code == 201, r.text
    return r.json()["id"]


@pytest.fixture
def scripted() -> ScriptedExecutor:
    return ScriptedExecutor()


@pytest.fixture
def agent(db_url: str, scripted: ScriptedExecutor):
    # poll_seconds=60: anything that starts within the test's time-outs started on an event, not a poll.
    with serve(db_url, scripted, worker_enabled=True, poll_seconds=60, lease_seconds=2) as api:
        yield api


def test_default_executor_is_the_agent_loop_and_fails_honestly_without_a_provider(
    db_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The default executor reads its settings from the environment, as in the appliance: clear the
    # provider variables a developer's shell may hold.
    for var in (*MODEL_VARIABLES, "AGENT_MODEL"):
        monkeypatch.delenv(var, raising=False)
    assert TaskSettings().executor == "deskpilot.agent.executor:AgentExecutor"
    with serve(db_url, worker_enabled=True, poll_seconds=60) as api:
        task_id = post(api, "anything")
        wait_until(lambda: status(api, task_id) == "FAILED", 10)
        t = api.get(f"/tasks/{task_id}").json()
        assert t["error"] == no_model_message() and t["executedAt"] and t["completedAt"]
        assert api.get("/health").json()["worker"] is True


def test_a_build_without_the_agent_loop_fails_tasks_honestly(db_url: str) -> None:
    executor = load_executor("deskpilot.tasks.executor:UnavailableExecutor")  # what TASKS_EXECUTOR=... loads
    with serve(db_url, executor, worker_enabled=True, poll_seconds=60) as api:
        task_id = post(api, "anything")
        wait_until(lambda: status(api, task_id) == "FAILED", 5)
        assert api.get(f"/tasks/{task_id}").json()["error"] == UNAVAILABLE


def test_new_task_starts_at_once_when_the_desktop_is_idle(agent: httpx.Client, scripted) -> None:
    t0 = time.monotonic()
    task_id = post(agent, "block")
    wait_until(lambda: task_id in scripted.started(), 2, interval=0.002)
    assert time.monotonic() - t0 < 3.0  # far below poll_seconds=60: started on the event (bench: ~20 ms)
    got = agent.get("/tasks/in-progress").json()
    assert got["id"] == task_id and got["status"] == "IN_PROGRESS"


def test_one_task_at_a_time_then_the_next_by_priority(agent: httpx.Client, scripted) -> None:
    blocker = post(agent, "block")
    wait_until(lambda: blocker in scripted.started())
    low = post(agent, "complete low", priority="LOW")
    medium = post(agent, "complete medium")
    urgent = post(agent, "complete urgent", priority="URGENT")
    high = post(agent, "complete high", priority="HIGH")
    time.sleep(0.2)
    assert scripted.started() == [blocker]
    assert agent.get("/tasks", params={"status": "IN_PROGRESS"}).headers["x-total-count"] == "1"
    assert agent.patch(f"/tasks/{blocker}", json={"status": "COMPLETED"}).status_code == 200
    wait_until(lambda: status(agent, low) == "COMPLETED")
    assert scripted.started() == [blocker, urgent, high, medium, low]
    assert "cancelled" in scripted.events(blocker)  # the human completed it: the agent stopped


def test_executor_outcomes_set_the_final_status(agent: httpx.Client, scripted) -> None:
    done = post(agent, "complete")
    wait_until(lambda: status(agent, done) == "COMPLETED")
    t = agent.get(f"/tasks/{done}").json()
    assert t["result"] == {"ok": True} and t["completedAt"]
    assert [(m["role"], m["content"][0]["text"]) for m in t["messages"]][-1] == ("ASSISTANT", "done")
    boom = post(agent, "raise")
    wait_until(lambda: status(agent, boom) == "FAILED")
    assert agent.get(f"/tasks/{boom}").json()["error"] == "RuntimeError: boom"
    quiet = post(agent, "return")
    wait_until(lambda: status(agent, quiet) == "FAILED")
    assert "without setting a final status" in agent.get(f"/tasks/{quiet}").json()["error"]


def test_cancelling_the_running_task_stops_the_executor(agent: httpx.Client, scripted) -> None:
    task_id = post(agent, "block")
    wait_until(lambda: "step" in scripted.events(task_id))
    r = agent.patch(f"/tasks/{task_id}", json={"status": "CANCELLED"})
    assert r.status_code == 200 and r.json()["status"] == "CANCELLED"
    assert "cancelled" in scripted.events(task_id)  # stopped before the answer
    assert agent.get("/tasks/in-progress").json() is None
    nxt = post(agent, "complete")
    wait_until(lambda: status(agent, nxt) == "COMPLETED")


def test_deleting_the_running_task_cancels_it_first(agent: httpx.Client, scripted) -> None:
    task_id = post(agent, "block")
    wait_until(lambda: "step" in scripted.events(task_id))
    assert agent.delete(f"/tasks/{task_id}").status_code == 204
    assert "cancelled" in scripted.events(task_id)
    assert agent.get(f"/tasks/{task_id}").status_code == 404
    nxt = post(agent, "complete")
    wait_until(lambda: status(agent, nxt) == "COMPLETED")


def test_takeover_pauses_the_agent_until_resume(agent: httpx.Client, scripted) -> None:
    task_id = post(agent, "block")
    wait_until(lambda: scripted.events(task_id).count("step") >= 2)
    assert agent.post(f"/tasks/{task_id}/takeover").json()["control"] == "USER"
    time.sleep(0.2)  # a step already past wait_for_control may finish
    paused_at = scripted.events(task_id).count("step")
    time.sleep(0.3)
    assert scripted.events(task_id).count("step") == paused_at
    assert status(agent, task_id) == "IN_PROGRESS"
    assert agent.post(f"/tasks/{task_id}/resume").json()["control"] == "ASSISTANT"
    wait_until(lambda: scripted.events(task_id).count("step") > paused_at + 2, 2)
    agent.patch(f"/tasks/{task_id}", json={"status": "CANCELLED"})


def test_a_reply_to_needs_help_runs_the_task_again(agent: httpx.Client, scripted) -> None:
    task_id = post(agent, "help")
    wait_until(lambda: status(agent, task_id) == "NEEDS_HELP")
    assert agent.get("/tasks/in-progress").json() is None
    r = agent.post(f"/tasks/{task_id}/messages", json={"content": "the one on the desktop"})
    assert r.status_code == 201
    wait_until(lambda: status(agent, task_id) == "COMPLETED")
    assert scripted.events(task_id).count("start") == 2
    roles = [m["role"] for m in agent.get(f"/tasks/{task_id}/messages").json()]
    assert roles == ["USER", "ASSISTANT", "USER"]


def test_needs_help_moved_back_to_in_progress_by_a_human_is_resumed(agent: httpx.Client, scripted) -> None:
    task_id = post(agent, "help")
    wait_until(lambda: status(agent, task_id) == "NEEDS_HELP")
    r = agent.patch(f"/tasks/{task_id}", json={"status": "IN_PROGRESS"})
    assert r.status_code == 200
    wait_until(lambda: status(agent, task_id) == "COMPLETED")
    assert scripted.events(task_id).count("start") == 2


def test_scheduled_task_starts_when_due_not_before(agent: httpx.Client, scripted) -> None:
    due = datetime.now(UTC) + timedelta(seconds=0.8)
    task_id = post(agent, "complete", scheduledFor=due.isoformat())
    later = post(agent, "complete", scheduledFor=(due + timedelta(hours=1)).isoformat())
    wait_until(lambda: status(agent, task_id) == "COMPLETED", 5)
    executed = datetime.fromisoformat(agent.get(f"/tasks/{task_id}").json()["executedAt"])
    assert due - timedelta(milliseconds=5) <= executed < due + timedelta(seconds=3)
    assert status(agent, later) == "PENDING"
