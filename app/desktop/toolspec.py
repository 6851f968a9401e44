"""The desktop actions as LLM/MCP tools: name, description and JSON schema, generated from the action models.

One table serves the MCP endpoint and the agent's tool list, so a tool can never drift from the
``POST /computer-use`` request it stands for.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

from app.desktop.actions import ACTION_MODELS

PREFIX = "computer_"

COORDINATES = "Coordinates are pixels on the 1920x1080 screen: x 0-1919 from the left, y 0-1079 from the top."
KEY_NAMES = (
    "Key names are case-insensitive: ctrl, shift, alt, super, enter, esc, tab, space, backspace, delete, "
    "up, down, left, right, home, end, pgup, pgdn, insert, f1-f24, printscreen, any single character, "
    "or an X keysym name such as Page_Up or KP_5."
)
# What the action models' docstrings cannot say: when to prefer which tool.
GUIDANCE: dict[str, str] = {
    "move_mouse": COORDINATES,
    "trace_mouse": COORDINATES,
    "click_mouse": COORDINATES + " Omit coordinates to click where the pointer is.",
    "press_mouse": COORDINATES,
    "drag_mouse": COORDINATES,
    "scroll": COORDINATES + " One step is one mouse-wheel notch.",
    "type_keys": KEY_NAMES + " For a chord such as copy, use computer_press_keys down then up.",
    "press_keys": KEY_NAMES,
    "type_text": "Types like a keyboard into the focused window. For long text prefer computer_paste_text.",
    "paste_text": "Faster than typing for long text and reliable for any character; needs a window that "
    "accepts paste (ctrl+v, or ctrl+shift+v in terminals, chosen automatically).",
    "screenshot": "Call after acting to see the result. Use width or scale to get a smaller image.",
    "application": "Launches the application if it is not running, otherwise focuses and maximises it.",
    "write_file": "Relative paths are under /home/user/Desktop.",
    "read_file": "Relative paths are under /home/user/Desktop.",
}


@dataclass(frozen=True)
class ToolSpec:
    name: str
    action: str
    title: str
    description: str
    input_schema: dict[str, Any]


def input_schema(model: type[BaseModel]) -> dict[str, Any]:
    """The model's JSON schema without the ``action`` discriminator (the tool name carries it)."""
    schema = model.model_json_schema()
    schema["properties"].pop("action", None)
    required = [f for f in schema.get("required", []) if f != "action"]
    if required:
        schema["required"] = required
    else:
        schema.pop("required", None)
    schema.pop("title", None)
    schema.pop("description", None)
    return schema


def _spec(action: str, model: type[BaseModel]) -> ToolSpec:
    doc = " ".join((model.__doc__ or "").split()).replace("``", "")
    description = f"{doc} {GUIDANCE.get(action, '')}".strip()
    return ToolSpec(
        name=PREFIX + action,
        action=action,
        title=action.replace("_", " ").capitalize(),
        description=description,
        input_schema=input_schema(model),
    )


TOOLS: dict[str, ToolSpec] = {PREFIX + a: _spec(a, m) for a, m in ACTION_MODELS.items()}
