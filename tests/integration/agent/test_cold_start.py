"""A freshly started task service keeps answering while LiteLLM (seconds of imports) loads: at its first
task and at the UI's first ``GET /tasks/models``. The service runs in a process of its own, as in the
appliance, so LiteLLM is really cold; the model is the scripted one, as the local OpenAI-compatible server.
Its log (stderr) tells the task's life, one line per event, without the key.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path

import httpx

from deskpilot.scripted import ScriptedModel, tool
from testbed.agent_loop import service_process

QUICK = 0.5  # seconds: every answer while LiteLLM loads must come well within a second
KEY = "sk-scripted-0123456789"  # the local server's key (AGENT_OPENAI_BASE_KEY): never in a log line


def answer_times(client: httpx.Client, busy: Callable[[], bool]) -> list[tuple[str, float]]:
    """Time ``GET /health`` and ``GET /tasks`` back to back for as long as ``busy()`` holds."""
    times: list[tuple[str, float]] = []
    while busy():
        for path in ("/health", "/tasks"):
            t0 = time.perf_counter()
            assert client.get(path).status_code == 200
            times.append((path, time.perf_counter() - t0))
        time.sleep(0.02)
    return times


def settings(tmp_path: Path, desktop_url: str, desktop_files: Path, llm: ScriptedModel) -> dict[str, str]:
    return {
        "database_url": f"sqlite:///{tmp_path}/agent.db",
        "desktop_url": desktop_url,
        "desktop_files_dir": str(desktop_files),
        "openai_base_url": llm.base_url,
        "openai_base_model": "scripted",
        "openai_base_key": KEY,
        "model": "local/scripted",
        "llm_retries": "1",
        "poll_seconds": "0.5",
    }


def test_the_api_answers_while_the_first_task_loads_litellm(
    tmp_path: Path, desktop_url: str, desktop_files: Path, scripted_llm: ScriptedModel
) -> None:
    scripted_llm.play([tool("set_task_status", status="completed", description="done")])
    with (
        service_process(
            tmp_path, environment=None, **settings(tmp_path, desktop_url, desktop_files, scripted_llm)
        ) as service,
        httpx.Client(base_url=service.url, timeout=30) as client,
    ):
        started = time.perf_counter()
        task = client.post("/tasks", json={"description": "the first task"}).json()
        times = answer_times(client, lambda: not scripted_llm.requests)
        until_first_call = time.perf_counter() - started
        done = client.get(f"/tasks/{task['id']}").json()
        deadline = time.monotonic() + 30
        while done["status"] == "IN_PROGRESS" or done["status"] == "PENDING":
            assert time.monotonic() < deadline, done
            time.sleep(0.05)
            done = client.get(f"/tasks/{task['id']}").json()
    assert done["status"] == "COMPLETED", done["error"]
    assert scripted_llm.requests[0].headers["authorization"] == f"Bearer {KEY}"
    log = service.log.read_text()
    for line in (
        f"INFO deskpilot.tasks.lifecycle task created task={task['id']} status=PENDING priority=MEDIUM",
        f"INFO deskpilot.tasks.lifecycle task claimed task={task['id']} status=IN_PROGRESS",
        f"INFO deskpilot.agent.executor agent step task={task['id']} step=1 tools=set_task_status",
        f"INFO deskpilot.tasks.lifecycle task finished task={task['id']} status=COMPLETED",
    ):
        assert line in log, log
    assert KEY not in log
    assert until_first_call > 1.0, "LiteLLM was not loading meanwhile: this measured nothing"
    slowest = max(times, key=lambda t: t[1])
    assert slowest[1] < QUICK, (
        f"{slowest[0]} took {slowest[1]:.2f} s while LiteLLM loaded ({len(times)} calls)"
    )


def test_the_api_answers_while_the_first_model_list_loads_litellm(
    tmp_path: Path, desktop_url: str, desktop_files: Path, scripted_llm: ScriptedModel
) -> None:
    with (
        service_process(
            tmp_path, environment=None, **settings(tmp_path, desktop_url, desktop_files, scripted_llm)
        ) as service,
        httpx.Client(base_url=service.url, timeout=30) as client,
    ):
        models: list[httpx.Response] = []
        started = time.perf_counter()
        listing = threading.Thread(
            target=lambda: models.append(httpx.get(f"{service.url}/tasks/models", timeout=30))
        )
        listing.start()
        times = answer_times(client, listing.is_alive)
        until_listed = time.perf_counter() - started
        listing.join()
    assert models[0].status_code == 200
    assert [m["name"] for m in models[0].json()] == ["local/scripted"]
    assert until_listed > 1.0, "LiteLLM was not loading meanwhile: this measured nothing"
    slowest = max(times, key=lambda t: t[1])
    assert slowest[1] < QUICK, (
        f"{slowest[0]} took {slowest[1]:.2f} s while LiteLLM loaded ({len(times)} calls)"
    )
