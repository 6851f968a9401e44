"""The agent loop end to end: a scripted model over real HTTP drives real tasks on a real desktop.

Each test scripts the model's tool calls, runs a task through the task service's own worker, and checks
both the effect on the desktop and what the agent sent to the model.
"""

from __future__ import annotations

import asyncio
import base64
import logging
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from deskpilot.agent.tools import HIDDEN_ACTIONS
from deskpilot.computer.actions import ACTION_MODELS
from deskpilot.logs import Formatter
from deskpilot.scripted import Answer, Request, ScriptedModel, fail, text, tool
from deskpilot.tasks.store import Store
from testbed.agent_loop import (
    Agent,
    blocks,
    desktop_action,
    loop_settings,
    serve_agent,
    unique,
)
from testbed.desktop_files import real_desktop
from tests.fakes.llm_proxy import LiteLLMProxy

# one tool per POST /computer-use action but accessibility (the agent's elements tool renders its tree)
COMPUTER_TOOLS = {f"computer_{a}" for a in ACTION_MODELS if a not in HIDDEN_ACTIONS}


def hello_script(folder: Path) -> list:
    """Open the terminal, write <folder>/hello.txt with `hi`, report completion."""
    return [
        tool("computer_application", application="terminal"),
        tool("computer_type_text", text=f"mkdir -p {folder} && echo hi > {folder}/hello.txt\n"),
        tool("computer_wait", duration=300),
        tool("set_task_status", status="completed", description="Created hello.txt containing hi."),
    ]


def run_once(
    tmp_path: Path, desktop_url: str, files_dir: Path, llm_url: str, description: str, **overrides: Any
) -> dict:
    """One task through an task service with these settings, until it comes to rest."""
    settings = loop_settings(tmp_path / "once.db", desktop_url, llm_url, files_dir, **overrides)
    with serve_agent(settings) as agent:
        return agent.wait(agent.create(description)["id"])


def read_desktop_file(desktop_url: str, path: str) -> bytes | None:
    r = desktop_action(desktop_url, "read_file", path=path)
    return base64.b64decode(r.json()["data"]) if r.status_code == 200 else None


def test_hello_txt_task_completes_and_the_file_exists(
    agent: Agent, scripted_llm: ScriptedModel, desktop_url: str, desktop_files: Path
) -> None:
    folder = desktop_files / unique("hello")
    scripted_llm.play(hello_script(folder))
    task = agent.create(f"Open the terminal and create {folder}/hello.txt containing hi")
    done = agent.wait(task["id"], timeout=90)
    assert done["status"] == "COMPLETED", done.get("error")
    assert done["result"] == {"description": "Created hello.txt containing hi."}
    assert done["model"] == "local/scripted"
    assert read_desktop_file(desktop_url, f"{folder}/hello.txt") == b"hi\n"
    # four calls of 100 prompt and 20 completion tokens each (the scripted model's usage)
    assert done["usage"] == {"promptTokens": 400, "completionTokens": 80, "totalTokens": 480}

    reqs = scripted_llm.requests
    assert len(reqs) == 4
    assert COMPUTER_TOOLS | {"set_task_status", "create_task", "zoom", "elements"} == set(reqs[0].tool_names)
    assert "Open the terminal" in reqs[0].text_of("user")[0]
    assert reqs[0].images(), "the model starts from a screenshot"
    for r in reqs[1:]:
        assert r.last_tool_result_has_image(), "every desktop action returns the settled screenshot"
    png = base64.b64decode(reqs[1].images()[-1].split(",", 1)[1])
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    assert int.from_bytes(png[16:20], "big") == 1280  # scaled to the model's size

    kinds = {b["type"] for b in blocks(done)}
    assert {"text", "image", "tool_use", "tool_result"} <= kinds
    assert {m["role"] for m in done["messages"]} == {"USER", "ASSISTANT"}


def test_a_question_needs_help_and_a_user_message_resumes_to_completion(
    agent: Agent, scripted_llm: ScriptedModel
) -> None:
    def answer_seen(req: Request) -> Answer:
        assert "Call it notes.txt" in "\n".join(req.text_of("user"))
        return tool("set_task_status", status="completed", description="Named it notes.txt")

    scripted_llm.play([text("Which name should the file have?"), answer_seen])
    task = agent.create("Save my notes in a file")
    stuck = agent.wait(task["id"])
    assert stuck["status"] == "NEEDS_HELP"
    assert blocks(stuck, "ASSISTANT")[-1] == {"type": "text", "text": "Which name should the file have?"}

    agent.say(task["id"], "Call it notes.txt")
    done = agent.wait(task["id"], {"COMPLETED", "FAILED"})
    assert done["status"] == "COMPLETED"
    assert len(scripted_llm.requests) == 2


def test_needs_review_waits_for_the_human_to_complete(agent: Agent, scripted_llm: ScriptedModel) -> None:
    scripted_llm.play([tool("set_task_status", status="needs_review", description="Check the draft")])
    task = agent.create("Draft a reply")
    assert agent.wait(task["id"])["status"] == "NEEDS_REVIEW"
    r = agent.client.patch(f"/tasks/{task['id']}", json={"status": "COMPLETED"})
    assert r.status_code == 200 and r.json()["status"] == "COMPLETED"


def agent_log(caplog: pytest.LogCaptureFixture, task_id: str) -> list[dict[str, Any]]:
    """The agent loop's log lines about the task: each record's fields with its message and level."""
    return [
        {**vars(r), "message": r.getMessage(), "level": r.levelname}
        for r in caplog.records
        if r.name == "deskpilot.agent.executor" and getattr(r, "task", None) == task_id
    ]


def test_the_step_budget_stops_the_run(
    tmp_path: Path,
    desktop_url: str,
    desktop_files: Path,
    scripted_llm: ScriptedModel,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO)
    moves = iter(range(100, 1000, 10))
    scripted_llm.play(
        [],
        # play() runs a callable `then` as it runs a callable step; its annotation says Answer only
        then=lambda _req: tool("computer_move_mouse", coordinates={"x": next(moves), "y": 50}),  # type: ignore[arg-type]
    )
    task = run_once(tmp_path, desktop_url, desktop_files, scripted_llm.base_url, "Wander around", max_steps=3)
    assert task["status"] == "NEEDS_HELP"
    assert "AGENT_MAX_STEPS=3" in blocks(task, "ASSISTANT")[-1]["text"]
    assert len(scripted_llm.requests) == 3

    # one line per step, with its timings; the budget's stop as a warning
    *steps, stop = agent_log(caplog, task["id"])
    assert steps[0]["message"] == "agent run started" and steps[0]["model"] == "local/scripted"
    assert [(line["message"], line["step"]) for line in steps[1:]] == [("agent step", n) for n in (1, 2, 3)]
    for line in steps[1:]:
        assert line["tools"] == "computer_move_mouse" and line["tokens"] == 120
        assert (
            line["llm_ms"] > 0
            and line["tools_ms"] > 0
            and line["step_ms"] >= line["llm_ms"] + line["tools_ms"]
        )
    assert (stop["level"], stop["step"]) == ("WARNING", 3) and "AGENT_MAX_STEPS=3" in stop["reason"]
    # what a line shows of a step: names, sizes and timings, never a screenshot
    text = "\n".join(Formatter(secrets=[]).format(r) for r in caplog.records)
    assert "iVBOR" not in text and "base64" not in text


def test_the_loop_breaker_stops_a_repeated_action(
    tmp_path: Path,
    desktop_url: str,
    desktop_files: Path,
    scripted_llm: ScriptedModel,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO)
    scripted_llm.play([], then=tool("computer_move_mouse", coordinates={"x": 200, "y": 200}))
    task = run_once(
        tmp_path, desktop_url, desktop_files, scripted_llm.base_url, "Keep moving", repeat_limit=3
    )
    assert task["status"] == "NEEDS_HELP"
    assert "repeated computer_move_mouse" in blocks(task, "ASSISTANT")[-1]["text"]
    assert len(scripted_llm.requests) == 3
    stop = agent_log(caplog, task["id"])[-1]
    assert stop["message"] == "agent run stopped" and "repeated computer_move_mouse" in stop["reason"]


def test_an_uploaded_file_is_read_with_computer_read_file(
    agent: Agent, scripted_llm: ScriptedModel, desktop_files: Path
) -> None:
    name = unique("brief") + ".txt"

    def secret_seen(req: Request) -> Answer:
        result = req.tool_results()[-1]["content"]
        assert "the secret is 42" in result, result
        return tool("set_task_status", status="completed", description="The secret is 42")

    scripted_llm.play([tool("computer_read_file", path=name), secret_seen])
    r = agent.client.post(
        "/tasks",
        data={"description": f"What does {name} say?"},
        files={"files": (name, b"the secret is 42\n", "text/plain")},
    )
    assert r.status_code == 201, r.text
    done = agent.wait(r.json()["id"])
    assert done["status"] == "COMPLETED", done.get("error")
    assert f"{desktop_files}/{name}" in "\n".join(scripted_llm.requests[0].text_of("user"))
    assert not (real_desktop() / name).exists(), "the upload went to the real ~/Desktop"


def test_invalid_arguments_and_desktop_4xx_go_back_to_the_model(
    agent: Agent, scripted_llm: ScriptedModel
) -> None:
    def errors_seen(req: Request) -> Answer:
        results = [m["content"] for m in req.tool_results()]
        assert results[0].startswith("Error: Invalid arguments:") and "button" in results[0], results
        assert results[1].startswith("Error:") and "no-such-file" in results[1], results
        return tool("set_task_status", status="failed", description="could not")

    scripted_llm.play(
        [
            tool("computer_click_mouse", button="sideways", clickCount=1),
            tool("computer_read_file", path="no-such-file-here.txt"),
            errors_seen,
        ]
    )
    done = agent.wait(agent.create("Click sideways")["id"])
    assert (done["status"], done["error"]) == ("FAILED", "could not")


def test_no_provider_fails_naming_the_variables(
    tmp_path: Path, desktop_url: str, desktop_files: Path
) -> None:
    with serve_agent(loop_settings(tmp_path / "a.db", desktop_url, None, desktop_files)) as agent:
        task = agent.wait(agent.create("Anything")["id"])
        assert agent.client.get("/tasks/models").json() == []
    assert task["status"] == "FAILED"
    assert "ANTHROPIC_API_KEY" in task["error"] and "AGENT_LLM_PROXY_URL" in task["error"]


def test_transient_llm_errors_are_retried_then_the_task_fails(
    agent: Agent, scripted_llm: ScriptedModel
) -> None:
    scripted_llm.play([], then=fail(503))
    task = agent.wait(agent.create("Anything")["id"])
    assert task["status"] == "FAILED"
    assert "failed 2 times" in task["error"]
    assert len(scripted_llm.requests) == 2  # AGENT_LLM_RETRIES=1 in these tests


def test_long_histories_are_summarised(
    tmp_path: Path, desktop_url: str, desktop_files: Path, scripted_llm: ScriptedModel
) -> None:
    def summary_request(req: Request) -> Answer:
        assert req.tool_names == [] and "Summarise" in req.messages[-1]["content"]
        return text("SUMMARY: the pointer was moved to 300,300.")

    def after_summary(req: Request) -> Answer:
        users = "\n".join(req.text_of("user"))
        assert "SUMMARY: the pointer was moved" in users and "Keep going" in users
        assert not any(m.get("tool_calls") for m in req.messages), "summarised turns are gone"
        assert len(req.images()) == 1
        return tool("set_task_status", status="completed", description="ok")

    big = Answer(calls=[("computer_move_mouse", {"coordinates": {"x": 300, "y": 300}})], prompt_tokens=800)
    scripted_llm.play([big, summary_request, after_summary])
    done = run_once(
        tmp_path, desktop_url, desktop_files, scripted_llm.base_url, "Keep going", context_window=1000
    )
    assert done["status"] == "COMPLETED", done.get("error")

    async def summaries() -> list:
        store = await Store.open(f"sqlite:///{tmp_path / 'once.db'}", migrate=False)
        try:
            return await store.list_summaries(done["id"])
        finally:
            await store.close()

    [summary] = asyncio.run(summaries())
    assert (summary.content, summary.parent_id) == ("SUMMARY: the pointer was moved to 300,300.", None)
    # the summary's call counts too: 800 + 100 + 100 prompt tokens, 20 completion tokens each
    assert done["usage"] == {"promptTokens": 1000, "completionTokens": 60, "totalTokens": 1060}


def test_the_same_task_through_a_real_litellm_proxy(
    tmp_path: Path,
    desktop_url: str,
    desktop_files: Path,
    scripted_llm: ScriptedModel,
    llm_proxy: LiteLLMProxy,
) -> None:
    folder = desktop_files / unique("proxy")
    scripted_llm.play(hello_script(folder))
    settings = loop_settings(
        tmp_path / "a.db",
        desktop_url,
        None,
        desktop_files,
        llm_proxy_url=llm_proxy.url,
        llm_proxy_key=llm_proxy.master_key,
        model=llm_proxy.model_name,
    )
    with serve_agent(settings) as agent:
        assert agent.client.get("/tasks/models").json() == [
            {
                "provider": "proxy",
                "name": llm_proxy.model_name,
                "title": llm_proxy.model_name,
                "contextWindow": llm_proxy.context_window,
            }
        ]
        done = agent.wait(
            agent.create(f"Open the terminal and create {folder}/hello.txt containing hi")["id"], timeout=90
        )
    assert done["status"] == "COMPLETED", done.get("error")
    assert read_desktop_file(desktop_url, f"{folder}/hello.txt") == b"hi\n"
    assert all(r.body["model"] == "scripted" for r in scripted_llm.requests)
    assert scripted_llm.requests[1].last_tool_result_has_image()


def test_no_desktop_action_while_a_human_holds_control(
    agent: Agent, scripted_llm: ScriptedModel, desktop_url: str
) -> None:
    desktop_action(desktop_url, "move_mouse", coordinates={"x": 5, "y": 5})
    task_id: list[str] = []

    def take_over_then_move(req: Request) -> Answer:
        r = httpx.post(f"{agent.client.base_url}/tasks/{task_id[0]}/takeover")  # the human grabs control
        assert r.status_code == 200 and r.json()["control"] == "USER", r.text
        return tool("computer_move_mouse", coordinates={"x": 100, "y": 100})

    def handed_back_seen(req: Request) -> Answer:
        assert "A human had control" in req.tool_results()[-1]["content"]
        return tool("set_task_status", status="completed", description="moved")

    scripted_llm.play([take_over_then_move, handed_back_seen])
    task_id.append(agent.create("Move the pointer")["id"])
    scripted_llm.wait_requests(1)
    time.sleep(1.0)
    pos = desktop_action(desktop_url, "cursor_position").json()["data"]
    assert (pos["x"], pos["y"]) == (5, 5), "the agent acted while the human had control"
    assert agent.task(task_id[0])["status"] == "IN_PROGRESS"

    assert agent.client.post(f"/tasks/{task_id[0]}/resume").status_code == 200
    done = agent.wait(task_id[0])
    assert done["status"] == "COMPLETED", done.get("error")
    pos = desktop_action(desktop_url, "cursor_position").json()["data"]
    assert (pos["x"], pos["y"]) == (150, 150)  # model 100,100 on 1280x720 -> screen 150,150


def test_the_model_zooms_and_points_into_the_zoom(
    agent: Agent, scripted_llm: ScriptedModel, desktop_url: str
) -> None:
    """zoom magnifies a region of the model's screenshot; a pointer move with inZoom lands on the screen
    pixel the zoomed image shows there, through the desktop's ``space`` transform; before a zoom, inZoom is
    refused."""

    def zoomed(req: Request) -> Answer:
        said = " ".join(req.text_of("tool"))
        assert "magnified 4.0x" in said and "inZoom: true" in said, said  # 320 px of 1280 -> 1280 px
        return tool("computer_move_mouse", coordinates={"x": 640, "y": 360}, inZoom=True)

    scripted_llm.play(
        [
            tool("computer_move_mouse", coordinates={"x": 10, "y": 10}, inZoom=True),  # no zoom yet
            tool("zoom", x=640, y=360, width=320, height=180),
            zoomed,
            tool("set_task_status", status="completed", description="pointed"),
        ]
    )
    done = agent.wait(agent.create("Point into a zoom")["id"])
    assert done["status"] == "COMPLETED"
    first = scripted_llm.requests[1].tool_results()[0]["content"]
    assert "no zoom yet" in first, first
    # the zoom showed screen x 960..1439, y 540..809 at 1280 wide: its centre is the screen's (1200, 675)
    pos = desktop_action(desktop_url, "cursor_position").json()["data"]
    assert (pos["x"], pos["y"]) == (1200, 675)
