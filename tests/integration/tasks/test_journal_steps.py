"""Others' steps on a task's desktop, read from a real desktop service's journal and merged into a
trajectory by time, in the format trajectory.py writes."""

from __future__ import annotations

import asyncio
import io
import zipfile
from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import orjson

from deskpilot.computer.client import AsyncDesktop
from deskpilot.taskapi.types import iso
from deskpilot.tasks.journal_steps import journal_steps, run_window, task_journal_steps
from deskpilot.tasks.models import Task
from deskpilot.tasks.trajectory import trajectory
from testbed.timing import wait_until
from testbed.xvfb import Display
from tests.integration.desktop.conftest import serve


def test_others_steps_come_from_the_journal_and_interleave_with_the_agents(
    display: Display, tmp_path: Path
) -> None:
    with serve(display, home=tmp_path, files_dir=tmp_path, journal_settle_ms=50) as desktop:
        start = iso(datetime.now(UTC)) or ""
        desktop.act(action="move_mouse", coordinates={"x": 40, "y": 40})
        wait_until(lambda: desktop.http.get("/journal").json()["entries"][-1]["frameAfter"], 10)
        agent_moment = datetime.now(UTC)

        async def agent_and_api() -> list[Any]:
            async with AsyncDesktop(desktop.url) as client:
                await client.acting_for("t-1").action("move_mouse", coordinates={"x": 50, "y": 50})
                await client.action("screenshot")  # not an input: not a step
                await client.action(
                    "click_mouse", coordinates={"x": 60, "y": 60}, button="left", clickCount=1
                )
                await client.action("wait", duration=600)  # the click's frame is taken meanwhile
                return await journal_steps(client, start, iso(datetime.now(UTC)) or "")

        steps = asyncio.run(agent_and_api())
    assert [(s.actor, s.action["action"]) for s in steps] == [("api", "move_mouse"), ("api", "click_mouse")]
    assert all(s.frame and s.frame.startswith(b"\x89PNG") for s in steps)
    assert "evidence" not in steps[0].action and steps[0].outcome == {"error": False, "text": ""}

    # the agent waited between the two: its call and result, as its conversation keeps them
    call = {"type": "tool_use", "id": "c1", "name": "computer_wait", "input": {"duration": 1}}
    done = {"type": "tool_result", "tool_use_id": "c1", "content": []}
    messages = [SimpleNamespace(content=[call, done], created_at=agent_moment)]
    task = SimpleNamespace(id="t-1", description="d", status="COMPLETED")
    archive = zipfile.ZipFile(io.BytesIO(trajectory(task, messages, journal=steps)))  # type: ignore[arg-type]
    header, *lines = [orjson.loads(line) for line in archive.read("trajectory.jsonl").splitlines()]
    assert header["steps"] == 3
    assert [(s["step"], s["actor"]) for s in lines] == [(1, "api"), (2, "agent"), (3, "api")]
    assert lines[1]["frameBefore"] == lines[0]["frameAfter"] == lines[2]["frameBefore"]
    assert all(s["replay"] for s in lines)
    for line in lines:
        if line["frameAfter"]:
            assert archive.read(f"frames/{line['frameAfter']}.png").startswith(b"\x89PNG")


def test_a_task_reads_the_journal_of_the_desktop_it_ran_on(display: Display, tmp_path: Path) -> None:
    never = Task(id="t-0", description="", status="PENDING")
    assert run_window(never) is None
    with serve(display, home=tmp_path, files_dir=tmp_path, journal_settle_ms=50) as desktop:
        desktop.act(action="move_mouse", coordinates={"x": 70, "y": 70})
        now = datetime.now(UTC)
        ran = Task(id="t-2", description="", status="COMPLETED", executed_on="elsewhere")
        ran.executed_at, ran.completed_at = now - timedelta(minutes=1), now + timedelta(seconds=1)

        async def read() -> list[Any]:
            async def listing() -> list[dict[str, Any]]:
                return [{"name": "elsewhere", "url": desktop.url + "/"}]

            async with AsyncDesktop("http://127.0.0.1:9") as own:  # nothing there: the fleet's URL is used
                service: Any = SimpleNamespace(desktop=own, registry=SimpleNamespace(listing=listing))
                found = await task_journal_steps(service, ran)
                ran.executed_on = None  # this service's own desktop: unreachable here, so no steps
                return [found, await task_journal_steps(service, ran)]

        found, unreachable = asyncio.run(read())
    assert [s.action["coordinates"] for s in found] == [{"x": 70.0, "y": 70.0}]
    assert unreachable == []
