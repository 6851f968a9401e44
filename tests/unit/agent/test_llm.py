"""llm.py: provider choice, the no-provider error, retries, replies from a scripted server over HTTP."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from deskpilot.agent.llm import LLM, LLMRejected, LLMUnavailable, NoProvider, route
from deskpilot.config import AgentSettings
from deskpilot.scripted import ScriptedModel, fail, text, tool, tools

PROVIDER_VARS = [
    "ANTHROPIC_API_KEY",
    "OPENAI_API_KEY",
    "GEMINI_API_KEY",
    "OPENROUTER_API_KEY",
    "AGENT_OPENAI_BASE_URL",
    "AGENT_MODEL",
    "AGENT_LLM_PROXY_URL",
    "AGENT_LLM_PROXY_KEY",
    "ANTHROPIC_MODEL",
    "OPENAI_MODEL",
    "GEMINI_MODEL",
    "OPENROUTER_MODEL",
]


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in PROVIDER_VARS:
        monkeypatch.delenv(var, raising=False)


@pytest.fixture(scope="module")
def scripted() -> Iterator[ScriptedModel]:
    with ScriptedModel().serve() as llm:
        yield llm


def settings(**kw) -> AgentSettings:
    return AgentSettings(llm_backoff=0.01, **kw)


def test_no_provider_names_every_variable_to_set() -> None:
    with pytest.raises(NoProvider) as e:
        route(settings())
    for var in (
        "ANTHROPIC_API_KEY",
        "OPENAI_API_KEY",
        "GEMINI_API_KEY",
        "OPENROUTER_API_KEY",
        "AGENT_OPENAI_BASE_URL",
        "AGENT_LLM_PROXY_URL",
    ):
        assert var in e.value.message


def test_provider_is_chosen_by_the_key_that_is_set(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GEMINI_API_KEY", "g-key")
    r = route(AgentSettings())
    assert (r.provider, r.name, r.litellm_model, r.api_key) == (
        "gemini",
        "gemini/gemini-3.5-flash",
        "gemini/gemini-3.5-flash",
        "g-key",
    )
    monkeypatch.setenv("ANTHROPIC_API_KEY", "a-key")  # anthropic comes first when both are set
    assert route(AgentSettings()).name == "anthropic/claude-sonnet-4-6"
    monkeypatch.setenv("ANTHROPIC_MODEL", "claude-opus-4-8")
    assert route(AgentSettings()).litellm_model == "anthropic/claude-opus-4-8"


def test_agent_model_and_task_model_select_among_configured_providers(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "a-key")
    monkeypatch.setenv("OPENROUTER_API_KEY", "o-key")
    monkeypatch.setenv("AGENT_MODEL", "openrouter/google/gemini-3.5-flash")
    s = AgentSettings()
    r = route(s)
    assert (r.provider, r.litellm_model, r.api_key) == (
        "openrouter",
        "openrouter/google/gemini-3.5-flash",
        "o-key",
    )
    assert route(s, "anthropic/claude-opus-4-8").api_key == "a-key"
    assert route(s, "claude-haiku-4-5").litellm_model == "anthropic/claude-haiku-4-5"  # bare: first provider
    with pytest.raises(NoProvider, match="OPENAI_API_KEY"):
        route(s, "openai/gpt-5.4")


def test_local_openai_compatible_server() -> None:
    r = route(settings(openai_base_url="http://127.0.0.1:11434/v1", openai_base_model="llava"))
    assert (r.name, r.litellm_model, r.api_base, r.api_key) == (
        "local/llava",
        "openai/llava",
        "http://127.0.0.1:11434/v1",
        "none",
    )


def test_proxy_routes_every_model_through_the_proxy(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "a-key")  # ignored once a proxy is set
    s = settings(llm_proxy_url="http://proxy:4000/", llm_proxy_key="sk-m", model="fast")
    r = route(s)
    assert (r.provider, r.litellm_model, r.api_base, r.api_key) == (
        "proxy",
        "litellm_proxy/fast",
        "http://proxy:4000",
        "sk-m",
    )
    assert route(s, "smart").litellm_model == "litellm_proxy/smart"
    with pytest.raises(NoProvider, match="AGENT_MODEL"):
        route(settings(llm_proxy_url="http://proxy:4000"))


@pytest.mark.anyio
async def test_model_list_of_configured_providers(monkeypatch: pytest.MonkeyPatch) -> None:
    assert await LLM(settings()).models() == []
    monkeypatch.setenv("ANTHROPIC_API_KEY", "a-key")
    monkeypatch.setenv("OPENAI_API_KEY", "o-key")
    models = await LLM(AgentSettings()).models()
    assert [m["name"] for m in models] == ["anthropic/claude-sonnet-4-6", "openai/gpt-5.4"]
    assert models[0] == {
        "provider": "anthropic",
        "name": "anthropic/claude-sonnet-4-6",
        "title": "claude-sonnet-4-6",
        "contextWindow": 1_000_000,
    }


@pytest.mark.anyio
async def test_tool_calls_and_text_come_back_as_content_blocks(scripted: ScriptedModel) -> None:
    scripted.play(
        [
            tools(
                tool("computer_click_mouse", coordinates={"x": 5, "y": 6}, button="left", clickCount=1),
                tool("computer_wait", duration=10),
            ),
            text("Which file do you mean?"),
        ]
    )
    llm = LLM(settings(openai_base_url=scripted.base_url, openai_base_model="scripted"))
    tool_def = {"type": "function", "function": {"name": "computer_wait", "parameters": {"type": "object"}}}
    reply = await llm.complete([{"role": "user", "content": "go"}], tools=[tool_def])
    assert [(b["name"], b["input"]) for b in reply.tool_uses] == [
        ("computer_click_mouse", {"coordinates": {"x": 5, "y": 6}, "button": "left", "clickCount": 1}),
        ("computer_wait", {"duration": 10}),
    ]
    assert reply.usage.prompt_tokens == 100 and reply.model == "local/scripted"
    reply = await llm.complete([{"role": "user", "content": "go"}])
    assert reply.text == "Which file do you mean?" and reply.tool_uses == []
    first = scripted.requests[0]
    assert first.body["model"] == "scripted" and first.tool_names == ["computer_wait"]


@pytest.mark.anyio
async def test_transient_errors_are_retried_then_give_up(scripted: ScriptedModel) -> None:
    scripted.play([fail(503), fail(429), text("ok")])
    llm = LLM(settings(openai_base_url=scripted.base_url, llm_retries=2))
    assert (await llm.complete([{"role": "user", "content": "hi"}])).text == "ok"
    assert len(scripted.requests) == 3

    scripted.play([], then=fail(503))
    with pytest.raises(LLMUnavailable, match="failed 3 times"):
        await llm.complete([{"role": "user", "content": "hi"}])
    assert len(scripted.requests) == 3


@pytest.mark.anyio
async def test_a_rejected_request_is_not_retried(scripted: ScriptedModel) -> None:
    scripted.play([fail(400), text("never")])
    llm = LLM(settings(openai_base_url=scripted.base_url, llm_retries=3))
    with pytest.raises(LLMRejected):
        await llm.complete([{"role": "user", "content": "hi"}])
    assert len(scripted.requests) == 1
