"""The model-call families of the task service's ``GET /metrics``, filled by the real agent loop calling the
scripted model through LiteLLM: each attempt timed by model and outcome (a 503 is transient and retried, a
400 is rejected), and the tokens the model reported, by kind."""

from __future__ import annotations

from pathlib import Path

import httpx

from deskpilot.scripted import ScriptedModel, fail, tool
from testbed.agent_loop import loop_settings, serve_agent
from testbed.metrics import scrape, value

MODEL = "local/scripted"  # what loop_settings routes to: the scripted server as an OpenAI-compatible one
CALLS = "deskpilot_model_call_duration_seconds_count"
TOKENS = "deskpilot_model_tokens_total"


def test_model_calls_and_tokens_are_measured(
    tmp_path: Path, desktop_url: str, desktop_files: Path, scripted_llm: ScriptedModel
) -> None:
    settings = loop_settings(tmp_path / "agent.db", desktop_url, scripted_llm.base_url, desktop_files)
    scripted_llm.play(
        [
            fail(503),  # transient: retried once (llm_retries=1)
            tool("computer_cursor_position"),
            tool("set_task_status", status="completed", description="done"),
        ]
    )
    with serve_agent(settings) as agent:
        assert agent.wait(agent.create("measure the model")["id"])["status"] == "COMPLETED"
        scripted_llm.play([fail(400)])
        assert agent.wait(agent.create("refused by the model")["id"])["status"] == "FAILED"
        with httpx.Client(base_url=str(agent.client.base_url), timeout=30) as client:
            text = scrape(client)
    assert value(text, CALLS, model=MODEL, outcome="ok") == 2
    assert value(text, CALLS, model=MODEL, outcome="transient") == 1
    assert value(text, CALLS, model=MODEL, outcome="rejected") == 1
    assert value(text, TOKENS, model=MODEL, kind="prompt") == 200  # the scripted model's 100 per answer
    assert value(text, TOKENS, model=MODEL, kind="completion") == 40
    assert value(text, "deskpilot_task_duration_seconds_count", outcome="completed") == 1
    assert value(text, "deskpilot_task_duration_seconds_count", outcome="failed") == 1
