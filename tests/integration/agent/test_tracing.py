"""Traces across the two services: a task run by the real task service (its worker, the agent loop, the
scripted model) on a real desktop service, each in a process of its own as the appliance runs them, both
exporting to an OTLP/HTTP receiver of the test's (testbed/otlp.py).

A task's trace: ``task`` → ``step`` (one per model call) → ``model.call`` and ``desktop.action`` → the desktop
service's ``desktop.perform`` (the same trace, its parent the agent's span, carried by ``traceparent``). No
attribute holds what was typed, a file's data or the token; the log lines about the task carry its id and
the trace's. Without ``OTEL_EXPORTER_OTLP_ENDPOINT`` nothing is sent and no SDK is set up.
"""

from __future__ import annotations

import base64
import contextlib
import json
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx

from deskpilot.scripted import ScriptedModel, tool
from deskpilot.security import digest
from testbed import ROOT
from testbed.agent_loop import SETTLED, service_process
from testbed.groups import stop_group
from testbed.net import free_port, wait_http
from testbed.otlp import ReceivedSpan, otlp_receiver
from testbed.xvfb import Display

TOKEN = "trace-test-token-" + "5f0c" * 8
TYPED = f"typed-secret-{uuid.uuid4().hex}"
FILE_TEXT = f"file-secret-{uuid.uuid4().hex}"
# the batch span processors export within 0.1 s (5 s by default), so the test need not wait
EXPORT = {"OTEL_BSP_SCHEDULE_DELAY": "100"}


@contextlib.contextmanager
def desktop_service(display: Display, files: Path, log: Path, env: dict[str, str]) -> Iterator[str]:
    """The desktop service in a uvicorn process of its own (its log in ``log``), with the token's digest."""
    port = free_port()
    argv = [sys.executable, "-m", "uvicorn", "--factory", "deskpilot.desktop.api:create_app"]
    argv += ["--host", "127.0.0.1", "--port", str(port), "--no-access-log"]
    own = ("OTEL_", "DESKPILOT_", "DESKTOP_")
    base = {k: v for k, v in display.env.items() if not k.startswith(own)}
    env = {
        **base,
        "DESKTOP_DISPLAY": display.name,
        "DESKTOP_FILES_DIR": str(files),
        "DESKPILOT_TOKEN_SHA256": digest(TOKEN),
        **env,
    }
    with log.open("wb") as stderr:
        proc = subprocess.Popen(
            argv, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=stderr, start_new_session=True
        )
    try:
        url = f"http://127.0.0.1:{port}"
        wait_http(f"{url}/health/live", timeout=60)
        yield url
    finally:
        stop_group(proc)


def agent_settings(tmp_path: Path, desktop_url: str, files: Path, llm: ScriptedModel) -> dict[str, str]:
    return {
        "database_url": f"sqlite:///{tmp_path}/agent.db",
        "desktop_url": desktop_url,
        "desktop_files_dir": str(files),
        "openai_base_url": llm.base_url,
        "openai_base_model": "scripted",
        "model": "local/scripted",
        "llm_retries": "1",
        "poll_seconds": "0.5",
    }


def script(name: str) -> list:
    """A click, a typed text, a file written, done: four model calls, three desktop actions after the
    first screenshot."""
    return [
        tool("computer_click_mouse", coordinates={"x": 1270, "y": 700}, button="left", clickCount=1),
        tool("computer_type_text", text=TYPED),
        tool("computer_write_file", path=name, data=base64.b64encode(FILE_TEXT.encode()).decode()),
        tool("set_task_status", status="completed", description="clicked, typed and wrote"),
    ]


def run_task(
    tmp_path: Path, display: Display, files: Path, llm: ScriptedModel, otel: dict[str, str]
) -> tuple[dict, Path, Path]:
    """One task through both services, each given ``otel``; (the task, the task service's log, the
    desktop service's)."""
    name = f"trace-{uuid.uuid4().hex[:8]}.txt"
    llm.play(script(name))
    desktop_log = tmp_path / "desktop.log"
    with desktop_service(display, files, desktop_log, otel) as desktop_url:
        settings = agent_settings(tmp_path, desktop_url, files, llm)
        with (
            service_process(tmp_path, environment={"DESKPILOT_TOKEN": TOKEN, **otel}, **settings) as service,
            httpx.Client(base_url=service.url, timeout=30, headers={"Authorization": f"Bearer {TOKEN}"}) as c,
        ):
            task = c.post("/tasks", json={"description": "click, type and write a file"}).json()
            deadline = time.monotonic() + 90
            while (done := c.get(f"/tasks/{task['id']}").json())["status"] not in SETTLED:
                assert time.monotonic() < deadline, done
                time.sleep(0.1)
    assert done["status"] == "COMPLETED", done.get("error")
    assert (files / name).read_text() == FILE_TEXT
    return done, service.log, desktop_log


def one(spans: list[ReceivedSpan]) -> ReceivedSpan:
    assert len(spans) == 1, spans
    return spans[0]


def finished(task_id: str) -> Callable[[list[ReceivedSpan]], bool]:
    """The whole trace is in: the task's span (the last to end), its four calls and four desktop actions."""

    def done(spans: list[ReceivedSpan]) -> bool:
        task = [s for s in spans if s.name == "task" and s.attributes.get("deskpilot.task.id") == task_id]
        if not task:
            return False
        ours = [s for s in spans if s.trace_id == task[0].trace_id]
        return (
            sum(s.name == "desktop.perform" for s in ours) >= 4
            and sum(s.name == "model.call" for s in ours) >= 4
        )

    return done


def test_a_task_is_one_trace_across_the_two_services(
    tmp_path: Path, loop_display: Display, desktop_files: Path, scripted_llm: ScriptedModel
) -> None:
    with otlp_receiver() as receiver:
        otel = {"OTEL_EXPORTER_OTLP_ENDPOINT": receiver.url, **EXPORT}
        task, agent_log, desktop_log = run_task(tmp_path, loop_display, desktop_files, scripted_llm, otel)
        spans = receiver.wait_for(finished(task["id"]))

    root = one([s for s in spans if s.name == "task" and s.attributes["deskpilot.task.id"] == task["id"]])
    assert root.service == "deskpilot-tasks" and root.parent_id == ""
    assert root.attributes["deskpilot.model"] == "local/scripted"
    assert root.attributes["deskpilot.outcome"] == "COMPLETED"
    trace = [s for s in spans if s.trace_id == root.trace_id]

    steps = {s.attributes["deskpilot.step"]: s for s in trace if s.name == "step"}
    assert sorted(steps) == [1, 2, 3, 4] and all(s.parent_id == root.span_id for s in steps.values())
    assert steps[2].attributes["deskpilot.tools"] == "computer_type_text"
    calls = [s for s in trace if s.name == "model.call"]
    assert sorted(c.parent_id for c in calls) == sorted(s.span_id for s in steps.values())  # one a step
    for call in calls:
        assert call.attributes["gen_ai.request.model"] == "local/scripted"
        assert call.attributes["gen_ai.usage.input_tokens"] == 100  # the scripted model's usage
        assert call.attributes["gen_ai.usage.output_tokens"] == 20
        assert call.attributes["deskpilot.outcome"] == "ok" and call.attributes["deskpilot.latency_ms"] > 0

    actions = {s.span_id: s for s in trace if s.name == "desktop.action"}
    by_action = {s.attributes["deskpilot.action"]: s for s in actions.values()}
    assert by_action["screenshot"].parent_id == root.span_id  # the first look, before the first step
    for number, action in ((1, "click_mouse"), (2, "type_text"), (3, "write_file")):
        assert by_action[action].parent_id == steps[number].span_id
        assert by_action[action].attributes["http.response.status_code"] == 200
    assert by_action["click_mouse"].attributes["deskpilot.settle_ms"] >= 0
    assert "deskpilot.settled" in by_action["click_mouse"].attributes

    performs = [s for s in trace if s.name == "desktop.perform"]
    assert {p.service for p in performs} == {"deskpilot-desktop"}
    for perform in performs:  # each the child of the agent's span of its request, across the processes
        parent = actions[perform.parent_id]
        assert parent.attributes["deskpilot.action"] == perform.attributes["deskpilot.action"]
        assert perform.attributes["deskpilot.outcome"] == "ok"
        assert perform.attributes["deskpilot.task.id"] == task["id"]
        assert perform.attributes["deskpilot.actor"] == "agent"
    assert {p.attributes["deskpilot.action"] for p in performs} >= {"click_mouse", "type_text", "write_file"}
    # the services' own spans only: no span per HTTP request in either (FastAPI's are the UI's alone)
    assert {(s.service, s.name) for s in spans} == {
        ("deskpilot-tasks", "task"),
        ("deskpilot-tasks", "step"),
        ("deskpilot-tasks", "model.call"),
        ("deskpilot-tasks", "desktop.action"),
        ("deskpilot-desktop", "desktop.perform"),
    }

    # nothing typed, written or secret in any attribute, nor anywhere in what was exported
    encoded = base64.b64encode(FILE_TEXT.encode()).decode()
    for span in spans:
        text = json.dumps(span.attributes)
        for secret in (TYPED, FILE_TEXT, encoded, TOKEN, "Bearer"):
            assert secret not in text, (span.name, span.attributes)
    for body in receiver.bodies:
        assert TYPED.encode() not in body and FILE_TEXT.encode() not in body and TOKEN.encode() not in body

    # the log lines about the task carry its id and the trace's, in both services
    step_line = next(line for line in agent_log.read_text().splitlines() if " agent step " in line)
    assert f"task={task['id']}" in step_line and f"trace_id={root.trace_id}" in step_line
    assert f"span_id={steps[1].span_id}" in step_line
    typed_line = next(line for line in desktop_log.read_text().splitlines() if "action=type_text" in line)
    assert f"task={task['id']}" in typed_line and f"trace_id={root.trace_id}" in typed_line
    assert TYPED not in agent_log.read_text() + desktop_log.read_text()


def test_without_the_endpoint_nothing_is_sent_and_no_sdk_is_set_up(
    tmp_path: Path, loop_display: Display, desktop_files: Path, scripted_llm: ScriptedModel
) -> None:
    with otlp_receiver() as receiver:
        task, agent_log, desktop_log = run_task(tmp_path, loop_display, desktop_files, scripted_llm, {})
        time.sleep(0.5)  # longer than the export delay the other test uses
        assert receiver.requests == 0
    step_line = next(line for line in agent_log.read_text().splitlines() if " agent step " in line)
    assert f"task={task['id']}" in step_line and "trace_id=" not in step_line
    typed_line = next(line for line in desktop_log.read_text().splitlines() if "action=type_text" in line)
    assert f"task={task['id']}" in typed_line and "trace_id=" not in typed_line

    # each service's app made as its process makes it: the API's no-op provider, the SDK never imported
    code = (
        "import sys\n"
        "from opentelemetry import trace\n"
        "from deskpilot import tracing\n"
        "from deskpilot.desktop.api import create_app as desktop\n"
        "from deskpilot.tasks.app import create_app as tasks\n"
        "from deskpilot.ui.server import create_app as ui\n"
        "desktop(); tasks(); ui()\n"
        "print(type(trace.get_tracer_provider()).__name__, tracing.on(),\n"
        "      sorted(m for m in sys.modules if m.startswith('opentelemetry.sdk')))\n"
    )
    env = {k: v for k, v in loop_display.env.items() if not k.startswith(("OTEL_", "DESKPILOT_", "DESKTOP_"))}
    env |= {"DESKTOP_DISPLAY": loop_display.name, "DESKTOP_FILES_DIR": str(desktop_files)}
    env |= {"TASKS_DATABASE_URL": f"sqlite:///{tmp_path}/unset.db", "TASKS_WORKER_ENABLED": "false"}
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[0] == "ProxyTracerProvider False []"
