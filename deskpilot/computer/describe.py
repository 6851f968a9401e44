"""A tool call of the agent, or a desktop action, as a person reads it: "clicked left at (640, 400)", not a
JSON dump. One place for every view of them: the UI's conversation and steps, the evaluation's report."""

from __future__ import annotations

import json
from typing import Any

__all__ = ["describe_tool_call"]

# Tool names may carry a prefix ("computer_click_mouse") or be the bare desktop action ("click_mouse");
# an Anthropic-style `computer` tool puts the action in the input instead.
_PREFIXES = ("computer_", "desktop_")


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
