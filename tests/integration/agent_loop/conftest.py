"""Agent-loop fixtures: one scripted LLM and one real LiteLLM proxy in front of it, per session."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.fakes.llm_proxy import LiteLLMProxy, litellm_proxy
from tests.fakes.llm_server import ScriptedLLM


@pytest.fixture(scope="session")
def scripted_server() -> Iterator[ScriptedLLM]:
    with ScriptedLLM().serve() as llm:
        yield llm


@pytest.fixture
def scripted_llm(scripted_server: ScriptedLLM) -> ScriptedLLM:
    """The session's scripted LLM with an empty script: call ``.play([...])`` in the test."""
    scripted_server.play([])
    return scripted_server


@pytest.fixture(scope="session")
def llm_proxy(scripted_server: ScriptedLLM) -> Iterator[LiteLLMProxy]:
    """A real ``litellm --config`` proxy on loopback (master key set) whose one model is the scripted LLM."""
    with litellm_proxy(scripted_server.base_url) as proxy:
        yield proxy
