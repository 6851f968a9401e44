"""The scripted model's plan: read from YAML or JSON, refused with a clear message when wrong, and answered
by task and step over real HTTP, by the module a user runs (``python -m deskpilot.scripted``)."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest

from deskpilot.scripted import Plan, PlanError, Request, ScriptedModel
from testbed.net import free_port, wait_http

PLAN = """
model: demo
tasks:
  - match: "hello (file|world)"
    steps:
      - tool: computer_application
        args: {application: terminal}
      - calls:
          - {tool: computer_type_text, args: {text: "echo hi\\n"}}
          - {tool: computer_wait, args: {duration: 100}}
      - text: Which name?
      - error: 503
  - match: "."
    steps:
      - {tool: set_task_status, args: {status: completed, description: done}}
"""


def conversation(task: str, replies: int) -> dict:
    messages = [
        {"role": "system", "content": "s"},
        {"role": "user", "content": [{"type": "text", "text": task}]},
    ]
    for _ in range(replies):
        messages += [{"role": "assistant", "content": "x"}, {"role": "user", "content": "ok"}]
    return {"model": "demo", "messages": messages}


def test_each_step_answers_the_turn_of_its_task() -> None:
    plan = Plan.parse(PLAN)
    steps = [plan.answer(Request(conversation("Write a Hello FILE", n), {})) for n in range(5)]
    assert steps[0].calls == [("computer_application", {"application": "terminal"})]
    assert [name for name, _ in steps[1].calls] == ["computer_type_text", "computer_wait"]
    assert steps[2].text == "Which name?" and not steps[2].calls
    assert steps[3].status == 503
    assert steps[4].status == 400 and "has 4 steps; the agent asks for step 5" in str(steps[4].text)
    other = plan.answer(Request(conversation("anything else", 0), {}))
    assert other.calls == [("set_task_status", {"status": "completed", "description": "done"})]


@pytest.mark.parametrize(
    ("source", "fragment"),
    [
        ("tasks: []", "at least 1"),
        ("tasks: [{match: '(', steps: [{text: a}]}]", "not a regular expression"),
        ("tasks: [{match: a, steps: [{}]}]", "a step needs a text, a tool, calls or an error"),
        ("tasks: [{match: a, steps: [{tool: x, argz: {}}]}]", "argz"),
        ("tasks: [{match: a, steps: [{error: 200}]}]", "greater than or equal to 400"),
        ("tasks: [", "not valid YAML"),
    ],
)
def test_a_wrong_plan_is_refused_saying_what_is_wrong(source: str, fragment: str) -> None:
    with pytest.raises(PlanError) as caught:
        Plan.parse(source, "plan.yaml")
    assert "plan.yaml" in str(caught.value) and fragment in str(caught.value)


def test_no_matching_task_is_a_400_naming_it() -> None:
    plan = Plan.parse(json.dumps({"tasks": [{"match": "^only$", "steps": [{"text": "a"}]}]}))
    with ScriptedModel(plan=plan).serve() as model:
        r = httpx.post(f"{model.base_url}/chat/completions", json=conversation("something", 0))
    assert r.status_code == 400 and "no task of the plan matches 'something'" in r.json()["error"]["message"]


def test_answers_take_the_latency_a_provider_would_each_in_its_own_time() -> None:
    plan = Plan.parse(json.dumps({"tasks": [{"match": ".", "steps": [{"text": "a"}]}]}))
    with ScriptedModel(plan=plan, latency=0.3).serve() as model, httpx.Client() as client:
        started = time.monotonic()
        with ThreadPoolExecutor(3) as pool:  # three desktops asking at once wait 0.3 s each, side by side
            codes = list(
                pool.map(
                    lambda _: (
                        client.post(
                            f"{model.base_url}/chat/completions", json=conversation("x", 0)
                        ).status_code
                    ),
                    range(3),
                )
            )
        took = time.monotonic() - started
    assert codes == [200, 200, 200] and 0.3 <= took < 0.9


@pytest.fixture
def served(tmp_path: Path) -> Iterator[str]:
    (tmp_path / "plan.yaml").write_text(PLAN)
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "deskpilot.scripted", str(tmp_path / "plan.yaml"), "--port", str(port)],
        stderr=subprocess.PIPE,
    )
    try:
        wait_http(f"http://127.0.0.1:{port}/v1/models")
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        proc.terminate()
        proc.wait(10)


def test_the_module_serves_a_plan_file_as_an_openai_server(served: str) -> None:
    assert httpx.get(f"{served}/models").json()["data"][0]["id"] == "demo"
    body = httpx.post(f"{served}/chat/completions", json=conversation("hello world", 1)).json()
    calls = body["choices"][0]["message"]["tool_calls"]
    assert [c["function"]["name"] for c in calls] == ["computer_type_text", "computer_wait"]
    assert json.loads(calls[0]["function"]["arguments"]) == {"text": "echo hi\n"}
    assert body["choices"][0]["finish_reason"] == "tool_calls" and body["usage"]["total_tokens"] == 120
    assert httpx.post(f"{served}/chat/completions", content=b"[").status_code == 400


def test_a_missing_plan_file_is_a_clear_error(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "deskpilot.scripted", str(tmp_path / "nope.yaml")],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 2 and "cannot read the plan" in done.stderr and "nope.yaml" in done.stderr
