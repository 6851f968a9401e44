"""Every call of the task service's client, blocking and asyncio, against a real appliance whose agent loop
runs on the scripted model through LiteLLM: tasks created with files, followed on the event stream to
NEEDS_HELP and COMPLETED, answered, taken over and handed back, scheduled, changed, cancelled, deleted."""

from __future__ import annotations

import base64
import json
import time
import zipfile
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from deskpilot.client import Agent, Sandbox, TaskClientError
from deskpilot.scripted import Plan, ScriptedModel, text, tool
from tests.integration.client.conftest import Driver

COVERED: set[tuple[str, str]] = set()
CALLS = {
    "create", "get", "tasks", "messages", "reply", "take_over", "hand_back", "update", "cancel", "delete",
    "clear", "models", "health", "wait", "trajectory",
}  # fmt: skip


@pytest.fixture(params=["sync", "async"])
def tasks(request: pytest.FixtureRequest, clean: Sandbox) -> Iterator[Driver]:
    client = Agent(clean.agent_url, clean.token) if request.param == "sync" else clean.async_agent()
    with Driver(client, COVERED) as driver:
        yield driver


def test_a_task_asks_waits_for_its_human_and_completes(
    tasks: Driver, model: ScriptedModel, clean: Sandbox, tmp_path: Path
) -> None:
    name = f"answer-{tasks.mode}.txt"
    model.play(
        [
            text("Which name should the file have?"),
            tool("computer_write_file", path=name, data=base64.b64encode(b"done").decode()),
            tool("set_task_status", status="completed", description="written"),
        ]
    )
    task = tasks.create("write a file", files={"input.txt": "the input"}, priority="HIGH")
    assert task.status == "PENDING" and task.priority == "HIGH"
    assert tasks.wait(task.id, timeout=120).status == "NEEDS_HELP"
    assert clean.desktop.read_file("input.txt").text == "the input"  # uploads land on the Desktop
    assert any(m.text == "Which name should the file have?" for m in tasks.messages(task.id))

    assert tasks.take_over(task.id).control == "USER"
    assert tasks.reply(task.id, name).role == "USER"
    asked = len(model.requests)
    time.sleep(1.5)  # the task runs again, but the agent takes no action while a human has the desktop
    assert len(model.requests) == asked and tasks.get(task.id).status == "IN_PROGRESS"
    assert tasks.hand_back(task.id).control == "ASSISTANT"
    done = tasks.wait(task.id, timeout=120)
    assert done.status == "COMPLETED", done.error
    assert clean.desktop.read_file(name).text == "done"
    assert any(name in said for r in model.requests for said in r.text_of("user"))  # the reply reached it
    detail = tasks.get(task.id)
    assert [f.name for f in detail.files] == ["input.txt"] and detail.model == "local/scripted"
    # its trajectory, downloaded to a path of its own (the folders made)
    saved = tasks.trajectory(task.id, tmp_path / tasks.mode / "run.zip")
    assert saved == tmp_path / tasks.mode / "run.zip"
    with zipfile.ZipFile(saved) as archive:
        steps = [json.loads(line) for line in archive.read("trajectory.jsonl").splitlines()[1:]]
    assert [s["action"]["action"] for s in steps] == ["write_file"]
    with pytest.raises(TaskClientError) as missing:
        tasks.trajectory("no-such-task", tmp_path / "none.zip")
    assert missing.value.status == 404 and not (tmp_path / "none.zip").exists()


def test_scheduled_changed_cancelled_deleted_and_cleared(tasks: Driver) -> None:
    later = datetime.now(UTC) + timedelta(hours=1)
    task = tasks.create("later", scheduled_for=later, model="local/scripted")
    assert task.type == "SCHEDULED" and abs(task.scheduled_for - later) < timedelta(seconds=1)
    changed = tasks.update(task.id, priority="LOW", description="later still")
    assert (changed.priority, changed.description) == ("LOW", "later still")
    assert [t.id for t in tasks.tasks("PENDING")] == [task.id]
    assert tasks.tasks(["COMPLETED", "FAILED"]) == []
    assert tasks.cancel(task.id).status == "CANCELLED"
    with pytest.raises(TaskClientError) as refused:
        tasks.update(task.id, status="NEEDS_REVIEW")
    assert refused.value.status == 400 and "CANCELLED" in refused.value.detail
    tasks.delete(task.id)
    with pytest.raises(TaskClientError) as gone:
        tasks.get(task.id)
    assert gone.value.status == 404
    for n in range(3):
        tasks.create(f"t{n}", scheduled_for=later)
    assert tasks.clear() == 3 and tasks.tasks() == []
    assert "local/scripted" in [m.name for m in tasks.models()]
    assert tasks.health()["status"] == "ok"


def test_waiting_times_out_saying_the_status(tasks: Driver) -> None:
    task = tasks.create("later", scheduled_for=datetime.now(UTC) + timedelta(hours=1))
    with pytest.raises(TimeoutError, match=r"still PENDING after 0\.5 s"):
        tasks.wait(task.id, timeout=0.5)


def test_every_call_was_made_both_ways() -> None:
    assert {(mode, c) for mode in ("sync", "async") for c in CALLS} <= COVERED


PLAN = """
tasks:
  - match: "^greet"
    steps:
      - text: Whom should I greet?
      - {tool: computer_write_file, args: {path: greeting.txt, data: aGk=}}
      - {tool: set_task_status, args: {status: completed, description: greeted}}
"""


def test_a_plan_drives_the_agent_loop_through_a_question(model: ScriptedModel, clean: Sandbox) -> None:
    """The scripted model as a user runs it: a plan matched on the task's text, through the real loop and
    LiteLLM, the question answered by a human, the next step played."""
    model.play([], plan=Plan.parse(PLAN))
    task = clean.agent.create("greet the team")
    assert clean.agent.wait(task.id, timeout=120).status == "NEEDS_HELP"
    clean.agent.reply(task.id, "the team")
    done = clean.agent.wait(task.id, timeout=120)
    assert done.status == "COMPLETED", done.error
    assert clean.desktop.read_file("greeting.txt").text == "hi"
    assert [r.turn for r in model.requests] == [0, 1, 2]
    other = clean.agent.create("something the plan does not know")
    failed = clean.agent.wait(other.id, timeout=120)
    assert failed.status == "FAILED" and "no task of the plan matches" in str(failed.error)
