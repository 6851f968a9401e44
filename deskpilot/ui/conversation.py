"""Turn stored messages (lists of content blocks) into what a person reads in the conversation.

The agent stores messages in the LLM provider's block format (`text`, `image`, `tool_use`,
`tool_result`, `thinking`). A person wants "clicked left at (640, 400)", not a JSON dump, so each
tool call is described in one short line (``deskpilot.computer.describe``, which the evaluation's report
shares), and the templates only lay them out.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from deskpilot.computer.describe import describe_tool_call


@dataclass
class Block:
    """One rendered piece of a message: ``kind`` selects the template, the rest is its data."""

    kind: str  # text | image | action | result | error | thinking | raw
    text: str = ""
    src: str = ""  # data: URI of an image
    detail: str = ""  # shown on hover / when expanded (raw tool input, JSON of unknown blocks)
    children: list[Block] = field(default_factory=list)


def _image_src(block: dict[str, Any]) -> str:
    source = block.get("source") or {}
    if source.get("type") == "base64" and source.get("data"):
        return f"data:{source.get('media_type', 'image/png')};base64,{source['data']}"
    if source.get("type") == "url" and source.get("url"):
        return str(source["url"])
    return ""


def render_block(block: Any) -> Block:
    """One stored content block → one :class:`Block` for the template."""
    if isinstance(block, str):
        return Block("text", text=block)
    if not isinstance(block, dict):
        return Block("raw", detail=json.dumps(block, ensure_ascii=False, default=str))
    kind = block.get("type")
    if kind == "text":
        return Block("text", text=str(block.get("text", "")))
    if kind == "image":
        src = _image_src(block)
        return Block("image", src=src) if src else Block("raw", detail="(image without data)")
    if kind == "tool_use":
        inp = block.get("input") or {}
        return Block(
            "action",
            text=describe_tool_call(str(block.get("name", "")), inp),
            detail=json.dumps(inp, ensure_ascii=False, default=str),
        )
    if kind == "tool_result":
        content = block.get("content")
        if isinstance(content, str):
            content = [{"type": "text", "text": content}]
        children = [render_block(b) for b in content or []]
        if block.get("is_error"):
            message = " ".join(c.text for c in children if c.kind == "text") or "the action failed"
            return Block("error", text=message, children=[c for c in children if c.kind != "text"])
        return Block("result", children=children)
    if kind in ("thinking", "redacted_thinking"):
        return Block("thinking", text=str(block.get("thinking", "")))
    return Block("raw", text=str(kind or "block"), detail=json.dumps(block, ensure_ascii=False, default=str))


@dataclass
class RenderedMessage:
    """A stored message as the conversation shows it: who wrote it, and its blocks ready for the template."""

    id: str
    author: str  # "user" | "agent" | "tool" (a message holding only tool results)
    created_at: str
    blocks: list[Block]


def render_message(message: dict[str, Any]) -> RenderedMessage:
    content = message.get("content")
    if isinstance(content, str):
        content = [{"type": "text", "text": content}]
    content = content or []
    role = str(message.get("role", "")).upper()
    blocks = [b for b in content if isinstance(b, dict)]
    only_results = bool(blocks) and all(b.get("type") == "tool_result" for b in blocks)
    # The agent's own observations ("The screen now:" + screenshot) are stored as USER messages too;
    # a person's messages are text only.
    observation = role == "USER" and any(b.get("type") == "image" for b in blocks)
    author = "tool" if only_results or observation else ("user" if role == "USER" else "agent")
    return RenderedMessage(
        id=str(message.get("id", "")),
        author=author,
        created_at=str(message.get("createdAt", "")),
        blocks=[render_block(b) for b in content],
    )
