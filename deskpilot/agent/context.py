"""Stored conversation (content blocks) → the OpenAI-format messages LiteLLM takes.

Stored blocks have Anthropic-style shapes (docs/task-api.md):

    text         {"type": "text", "text": ...}
    image        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": ...}}
    thinking     {"type": "thinking", "thinking": ..., "signature": ...}
    tool_use     {"type": "tool_use", "id": ..., "name": ..., "input": {...}}              (ASSISTANT)
    tool_result  {"type": "tool_result", "tool_use_id": ..., "content": [text/image blocks],
                  "is_error": bool}                                                      (USER)

OpenAI's format puts tool results in ``tool`` messages that must directly follow the assistant's
``tool_calls`` and may only hold text, so each tool result becomes a ``tool`` message with its text and
the images it carried (the screenshot after the action) follow in one ``user`` message. Only the newest
`keep_images` images are sent; older ones are replaced by a short note, which keeps long tasks cheap.
The conversion is defensive about history cut by a summary: a tool result whose call is not in the
context becomes plain text, and a call left without a result gets a "not executed" result.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

USER = "USER"
ASSISTANT = "ASSISTANT"
OMITTED = "[older screenshot omitted]"


@dataclass(frozen=True)
class Turn:
    """One stored message: role (USER | ASSISTANT) and its content blocks."""

    role: str
    content: list[dict[str, Any]]


def text_block(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


def image_block(b64: str, media_type: str = "image/png") -> dict[str, Any]:
    return {"type": "image", "source": {"type": "base64", "media_type": media_type, "data": b64}}


def tool_result_block(
    tool_use_id: str, content: list[dict[str, Any]], is_error: bool = False
) -> dict[str, Any]:
    return {"type": "tool_result", "tool_use_id": tool_use_id, "content": content, "is_error": is_error}


def _image_part(block: dict[str, Any]) -> dict[str, Any]:
    src = block["source"]
    return {"type": "image_url", "image_url": {"url": f"data:{src['media_type']};base64,{src['data']}"}}


def _drop_old_images(turns: Sequence[Turn], keep: int) -> list[Turn]:
    """Replace all but the newest `keep` images (also those inside tool results) with a text note."""
    seen = 0

    def walk(blocks: list[dict[str, Any]]) -> list[dict[str, Any]]:
        nonlocal seen
        out = []
        for b in reversed(blocks):
            if b["type"] == "image":
                seen += 1
                out.append(b if seen <= keep else text_block(OMITTED))
            elif b["type"] == "tool_result":
                out.append({**b, "content": walk(list(b.get("content") or []))})
            else:
                out.append(b)
        return out[::-1]

    return [Turn(t.role, walk(list(t.content))) for t in reversed(turns)][::-1]


def _texts(blocks: Iterable[dict[str, Any]]) -> str:
    return "\n".join(b["text"] for b in blocks if b["type"] == "text")


def to_openai(
    system: str, turns: Sequence[Turn], keep_images: int = 3, prefix: Sequence[Turn] = ()
) -> list[dict[str, Any]]:
    """The messages for one LLM call: system prompt, `prefix` (task, summary), then the stored turns."""
    messages: list[dict[str, Any]] = [{"role": "system", "content": system}]
    pending: set[str] = set()  # tool calls of the last assistant turn still waiting for their result

    def close_pending() -> None:
        for call_id in sorted(pending):
            messages.append({"role": "tool", "tool_call_id": call_id, "content": "Not executed."})
        pending.clear()

    for turn in [*prefix, *_drop_old_images(turns, keep_images)]:
        if turn.role == ASSISTANT:
            close_pending()
            msg: dict[str, Any] = {"role": "assistant", "content": _texts(turn.content) or None}
            calls = [b for b in turn.content if b["type"] == "tool_use"]
            if calls:
                msg["tool_calls"] = [
                    {
                        "id": c["id"],
                        "type": "function",
                        "function": {"name": c["name"], "arguments": json.dumps(c["input"])},
                    }
                    for c in calls
                ]
                pending = {c["id"] for c in calls}
            thinking = [b for b in turn.content if b["type"] == "thinking" and b.get("signature")]
            if thinking:  # Anthropic wants signed thinking blocks back alongside tool use
                msg["thinking_blocks"] = [
                    {"type": "thinking", "thinking": b["thinking"], "signature": b["signature"]}
                    for b in thinking
                ]
            if msg["content"] is None and not calls:
                continue  # thinking only: nothing a provider would accept
            messages.append(msg)
            continue
        parts: list[dict[str, Any]] = []
        for b in turn.content:
            if b["type"] == "tool_result":
                inner = list(b.get("content") or [])
                body = _texts(inner) or ("Error." if b.get("is_error") else "Done.")
                if b.get("is_error"):
                    body = f"Error: {body}" if not body.startswith("Error") else body
                images = [_image_part(i) for i in inner if i["type"] == "image"]
                if b["tool_use_id"] in pending:
                    pending.discard(b["tool_use_id"])
                    messages.append({"role": "tool", "tool_call_id": b["tool_use_id"], "content": body})
                    if images:
                        parts += [{"type": "text", "text": "Screenshot after the action:"}, *images]
                else:  # its call was summarised away
                    parts += [{"type": "text", "text": f"Result of an earlier action: {body}"}, *images]
            elif b["type"] == "text":
                parts.append({"type": "text", "text": b["text"]})
            elif b["type"] == "image":
                parts.append(_image_part(b))
        close_pending()
        if parts:
            if all(p["type"] == "text" for p in parts):
                messages.append({"role": "user", "content": "\n\n".join(p["text"] for p in parts)})
            else:
                messages.append({"role": "user", "content": parts})
    close_pending()
    return messages


def count_images(messages: Sequence[dict[str, Any]]) -> int:
    return sum(
        1
        for m in messages
        if isinstance(m.get("content"), list)
        for p in m["content"]
        if p.get("type") == "image_url"
    )


IMAGE_TOKENS = 1600  # what a 1280x720 screenshot costs on the big providers, roughly


def estimate_tokens(messages: Sequence[dict[str, Any]]) -> int:
    """A rough prompt size (4 characters a token, a flat rate per image) for servers that report no usage."""
    chars = 0
    for m in messages:
        content = m.get("content")
        if isinstance(content, str):
            chars += len(content)
        elif isinstance(content, list):
            chars += sum(len(p.get("text", "")) for p in content if p.get("type") == "text")
        chars += sum(len(c["function"]["arguments"]) for c in m.get("tool_calls") or [])
    return chars // 4 + IMAGE_TOKENS * count_images(messages)
