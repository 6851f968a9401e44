"""Stored content blocks → OpenAI messages: tool results, screenshots, pruning and cut histories."""

from __future__ import annotations

from deskpilot.agent.context import (
    ASSISTANT,
    OMITTED,
    USER,
    Turn,
    count_images,
    estimate_tokens,
    image_block,
    text_block,
    to_openai,
    tool_result_block,
)


def call(id_: str, name: str = "computer_wait", **args) -> dict:
    return {"type": "tool_use", "id": id_, "name": name, "input": args}


def shot(n: int) -> dict:
    return image_block(f"IMG{n}")


def test_a_tool_call_and_its_screenshot_result() -> None:
    turns = [
        Turn(USER, [text_block("open the terminal")]),
        Turn(ASSISTANT, [{"type": "thinking", "thinking": "hmm"}, text_block("ok"), call("c1", duration=5)]),
        Turn(USER, [tool_result_block("c1", [text_block("Waited 5 ms."), shot(1)])]),
    ]
    msgs = to_openai("SYS", turns)
    assert msgs[0] == {"role": "system", "content": "SYS"}
    assert msgs[1] == {"role": "user", "content": "open the terminal"}
    assert msgs[2]["role"] == "assistant" and msgs[2]["content"] == "ok"
    assert msgs[2]["tool_calls"][0]["function"] == {"name": "computer_wait", "arguments": '{"duration": 5}'}
    assert "thinking_blocks" not in msgs[2]  # unsigned thinking is not replayed
    assert msgs[3] == {"role": "tool", "tool_call_id": "c1", "content": "Waited 5 ms."}
    assert msgs[4]["role"] == "user"
    assert msgs[4]["content"][1] == {"type": "image_url", "image_url": {"url": "data:image/png;base64,IMG1"}}


def test_parallel_calls_get_their_tool_messages_before_the_screenshots() -> None:
    turns = [
        Turn(ASSISTANT, [call("a"), call("b")]),
        Turn(
            USER,
            [tool_result_block("a", [text_block("A")]), tool_result_block("b", [text_block("B"), shot(1)])],
        ),
    ]
    roles = [m["role"] for m in to_openai("S", turns)]
    assert roles == ["system", "assistant", "tool", "tool", "user"]


def test_errors_are_marked_and_calls_without_results_are_closed() -> None:
    turns = [
        Turn(ASSISTANT, [call("a"), call("b")]),
        Turn(USER, [tool_result_block("a", [text_block("coordinates off-screen")], is_error=True)]),
        Turn(USER, [text_block("please stop")]),
    ]
    msgs = to_openai("S", turns)
    assert msgs[2] == {"role": "tool", "tool_call_id": "a", "content": "Error: coordinates off-screen"}
    assert msgs[3] == {"role": "tool", "tool_call_id": "b", "content": "Not executed."}
    assert msgs[4] == {"role": "user", "content": "please stop"}


def test_a_result_whose_call_was_summarised_away_becomes_text() -> None:
    turns = [Turn(USER, [tool_result_block("gone", [text_block("Clicked."), shot(1)])])]
    msgs = to_openai("S", turns, prefix=[Turn(USER, [text_block("Summary: ...")])])
    assert [m["role"] for m in msgs] == ["system", "user", "user"]
    assert msgs[2]["content"][0]["text"] == "Result of an earlier action: Clicked."


def test_only_the_newest_screenshots_are_kept() -> None:
    turns = []
    for i in range(6):
        turns += [Turn(ASSISTANT, [call(f"c{i}")]), Turn(USER, [tool_result_block(f"c{i}", [shot(i)])])]
    msgs = to_openai("S", turns, keep_images=2)
    assert count_images(msgs) == 2
    urls = [
        p["image_url"]["url"]
        for m in msgs
        if isinstance(m["content"], list)
        for p in m["content"]
        if p["type"] == "image_url"
    ]
    assert urls == ["data:image/png;base64,IMG4", "data:image/png;base64,IMG5"]
    assert sum(OMITTED in (m["content"] or "") for m in msgs if m["role"] == "tool") == 4


def test_signed_thinking_is_sent_back_with_the_tool_call() -> None:
    turns = [Turn(ASSISTANT, [{"type": "thinking", "thinking": "t", "signature": "sig"}, call("a")])]
    msg = to_openai("S", turns)[1]
    assert msg["thinking_blocks"] == [{"type": "thinking", "thinking": "t", "signature": "sig"}]


def test_token_estimate_for_servers_without_usage() -> None:
    turns = [Turn(USER, [text_block("x" * 400), shot(1)]), Turn(ASSISTANT, [call("a", text="y" * 100)])]
    est = estimate_tokens(to_openai("S" * 40, turns))
    assert 1600 + 100 <= est <= 1600 + 150
