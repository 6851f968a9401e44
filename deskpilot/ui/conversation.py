"""Turn stored messages (lists of content blocks) into what a person reads in the conversation.

The agent stores messages in the LLM provider's block format (`text`, `image`, `tool_use`,
`tool_result`, `thinking`). A person wants "clicked left at (640, 400)", not a JSON dump, so each
tool call is described in one short line here, in one place, and the templates only lay them out.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

# Tool names may carry a prefix ("computer_click_mouse") or be the bare desktop action ("click_mouse");
# an Anthropic-style `computer` tool puts the action in the input instead.
_PREFIXES = ("computer_", "desktop_")


@dataclass
class Block:
    """One rendered piece of a message: ``kind`` selects the template, the rest is its data."""

    kind: str  # text | image | action | result | error | thinking | raw
    text: str = ""
    src: str = ""  # data: URI of an image
    detail: str = ""  # shown on hover / when expanded (raw tool input, JSON of unknown blocks)
    children: list[Block] = field(default_factory=list)


def _point(value: Any) -> str | None:
    if isinstance(value, dict) and "x" in value and "y" in value:
        return f"({_num(value['x'])}, {_num(value['y'])})"
    if isinstance(value, list | tuple) and len(value) == 2:
        return f"({_num(value[0])}, {_num(value[1])})"
    return None


def _num(value: Any) -> str:
    return str(int(value)) if isinstance(value, float) and value.is_integer() else str(value)


def _quote(text: Any, limit: int = 80) -> str:
    text = str(text)
    if len(text) > limit:
        text = text[: limit - 1] + "…"
    return json.dumps(text, ensure_ascii=False)


def _keys(keys: Any) -> str:
    if isinstance(keys, list | tuple):
        return "+".join(str(k) for k in keys)
    return str(keys)


def _held(inp: dict[str, Any]) -> str:
    hold = inp.get("holdKeys")
    return f" holding {_keys(hold)}" if hold else ""


def _path(inp: dict[str, Any]) -> str:
    path = inp.get("path") or []
    points = [p for p in (_point(p) for p in path) if p]
    if len(points) >= 2:
        return f"from {points[0]} to {points[-1]}"
    return "along a path"


_CLICK_WORDS = {1: "clicked", 2: "double-clicked", 3: "triple-clicked"}


def describe_tool_call(name: str, inp: dict[str, Any] | None) -> str:
    """One readable line for a tool call, e.g. ``clicked left at (640, 400)``."""
    inp = inp if isinstance(inp, dict) else {}
    action = name or ""
    for prefix in _PREFIXES:
        if action.startswith(prefix):
            action = action[len(prefix) :]
    if action == "computer" and "action" in inp:  # Anthropic computer-use tool style
        action = str(inp["action"])
    at = _point(inp.get("coordinates", inp.get("coordinate")))
    where = f" at {at}" if at else ""

    match action:
        case "click_mouse" | "left_click" | "right_click" | "middle_click" | "double_click" | "triple_click":
            button = inp.get("button") or action.split("_")[0]
            if button in ("double", "triple"):
                button = "left"
            count = int(inp.get("clickCount") or {"double": 2, "triple": 3}.get(action.split("_")[0], 1))
            word = _CLICK_WORDS.get(count, f"clicked {count} times")
            return f"{word} {button}{where}{_held(inp)}"
        case "move_mouse" | "mouse_move":
            return f"moved the mouse to {at or '?'}"
        case "trace_mouse":
            return f"moved the mouse {_path(inp)}{_held(inp)}"
        case "drag_mouse" | "left_click_drag":
            return f"dragged {inp.get('button', 'left')} {_path(inp)}{_held(inp)}"
        case "press_mouse":
            verb = "released" if inp.get("press") == "up" else "pressed"
            return f"{verb} {inp.get('button', 'left')} mouse button{where}"
        case "scroll":
            count = inp.get("scrollCount", inp.get("amount", 1))
            return f"scrolled {inp.get('direction', 'down')} {count}×{where}{_held(inp)}"
        case "type_text" | "type":
            return f"typed {_quote(inp.get('text', ''))}"
        case "paste_text":
            return f"pasted {_quote(inp.get('text', ''))}"
        case "type_keys" | "key":
            return f"pressed {_keys(inp.get('keys', inp.get('text', '')))}"
        case "press_keys":
            verb = "released" if inp.get("press") == "up" else "held down"
            return f"{verb} {_keys(inp.get('keys', ''))}"
        case "wait":
            ms = inp.get("duration")
            return f"waited {_num(ms / 1000 if isinstance(ms, int | float) else ms)} s" if ms else "waited"
        case "screenshot":
            return "took a screenshot"
        case "cursor_position":
            return "checked the cursor position"
        case "application":
            return f"switched to {inp.get('application', 'an application')}"
        case "write_file":
            return f"wrote file {inp.get('path', '')}"
        case "read_file":
            return f"read file {inp.get('path', '')}"
        case "set_task_status":
            status = str(inp.get("status", "")).lower().replace("_", " ")
            reason = inp.get("description") or inp.get("reason")
            return f"set the task to {status}" + (f": {reason}" if reason else "")
        case "create_task":
            return f"created a task {_quote(inp.get('description', ''))}"
    args = ", ".join(f"{key}={_quote(value, 40)}" for key, value in inp.items())
    return f"called {name}({args})"


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
