"""llm.py against a real LiteLLM proxy: the model list comes from /model/info, calls carry the master key."""

from __future__ import annotations

import httpx
import pytest

from deskpilot.agent.llm import LLM, LLMRejected
from deskpilot.config import AgentSettings
from deskpilot.scripted import ScriptedModel, text, tool
from tests.fakes.llm_proxy import LiteLLMProxy


def proxy_settings(proxy: LiteLLMProxy, **kw) -> AgentSettings:
    return AgentSettings(llm_proxy_url=proxy.url, llm_proxy_key=proxy.master_key, llm_backoff=0.01, **kw)


@pytest.mark.anyio
async def test_model_list_comes_from_the_proxys_model_info(llm_proxy: LiteLLMProxy) -> None:
    auth = {"Authorization": f"Bearer {llm_proxy.master_key}"}
    async with httpx.AsyncClient() as client:
        info = await client.get(f"{llm_proxy.url}/model/info", headers=auth)
    assert [m["model_name"] for m in info.json()["data"]] == [llm_proxy.model_name]
    llm = LLM(proxy_settings(llm_proxy))
    assert await llm.models() == [
        {
            "provider": "proxy",
            "name": llm_proxy.model_name,
            "title": llm_proxy.model_name,
            "contextWindow": llm_proxy.context_window,
        }
    ]
    assert await llm.context_window(llm_proxy.model_name) == llm_proxy.context_window


@pytest.mark.anyio
async def test_tool_calls_pass_through_the_proxy_with_the_master_key(
    llm_proxy: LiteLLMProxy, scripted_llm: ScriptedModel
) -> None:
    scripted_llm.play([tool("computer_wait", duration=5), text("done?")])
    llm = LLM(proxy_settings(llm_proxy, model=llm_proxy.model_name))
    tool_def = {
        "type": "function",
        "function": {
            "name": "computer_wait",
            "description": "wait",
            "parameters": {"type": "object", "properties": {"duration": {"type": "integer"}}},
        },
    }
    reply = await llm.complete([{"role": "user", "content": "wait a bit"}], tools=[tool_def])
    assert [(b["name"], b["input"]) for b in reply.tool_uses] == [("computer_wait", {"duration": 5})]
    assert reply.model == llm_proxy.model_name
    upstream = scripted_llm.requests[0]
    assert upstream.body["model"] == "scripted"  # the proxy's model_list mapped the logical name
    assert upstream.tool_names == ["computer_wait"]
    assert upstream.text_of("user") == ["wait a bit"]


@pytest.mark.anyio
async def test_a_wrong_proxy_key_is_rejected_without_retries(
    llm_proxy: LiteLLMProxy, scripted_llm: ScriptedModel
) -> None:
    s = AgentSettings(llm_proxy_url=llm_proxy.url, llm_proxy_key="sk-wrong", model=llm_proxy.model_name)
    with pytest.raises(LLMRejected):
        await LLM(s).complete([{"role": "user", "content": "hi"}])
    assert scripted_llm.requests == []
