"""What the agent sends survives LiteLLM's translation to Anthropic's format (offline: no request is made)."""

from __future__ import annotations

from deskpilot.agent.context import (
    ASSISTANT,
    USER,
    Turn,
    image_block,
    text_block,
    to_openai,
    tool_result_block,
)
from deskpilot.agent.litellm_loader import import_litellm
from deskpilot.agent.tools import tool_definitions
from deskpilot.computer.geometry import Size


def test_tool_results_and_screenshots_translate_to_anthropic_blocks() -> None:
    turns = [
        Turn(USER, [text_block("do it")]),
        Turn(
            ASSISTANT,
            [text_block("ok"), {"type": "tool_use", "id": "c1", "name": "computer_wait", "input": {}}],
        ),
        Turn(USER, [tool_result_block("c1", [text_block("Done."), image_block("iVBORw0KGgo=")])]),
    ]
    import_litellm()  # as the agent does: the bundled price map, no download attempt at import
    from litellm.llms.anthropic.chat.transformation import AnthropicConfig

    cfg = AnthropicConfig()
    tools = cfg.map_openai_params(
        {"tools": tool_definitions(Size(1280, 720))}, {}, "claude-sonnet-4-6", False
    )
    out = cfg.transform_request(
        model="claude-sonnet-4-6",
        messages=to_openai("SYS", turns),  # type: ignore[arg-type]  # OpenAI's JSON; litellm's TypedDicts
        optional_params={**tools, "max_tokens": 100},
        litellm_params={},
        headers={},
    )
    assert out["system"] == [{"type": "text", "text": "SYS"}]
    assert len(out["tools"]) == 20 and out["tools"][0]["input_schema"]["type"] == "object"
    last = out["messages"][-1]
    assert last["role"] == "user"
    assert last["content"][0] == {"type": "tool_result", "tool_use_id": "c1", "content": "Done."}
    assert last["content"][-1]["type"] == "image"
    assert last["content"][-1]["source"] == {
        "type": "base64",
        "media_type": "image/png",
        "data": "iVBORw0KGgo=",
    }
