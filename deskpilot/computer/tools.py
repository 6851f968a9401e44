"""The one tool table: every ``/computer-use`` action as a tool (name, title, description, schema).

The MCP endpoint and the agent's model both get their tools from ``TOOLS``, generated from the same action
models ``POST /computer-use`` validates with, so a tool can never drift from the request it stands for.
The two renderings differ only in the pixel space they speak of: MCP clients act on the screen itself;
the agent's model sees scaled screenshots, so its schemas bound coordinates to the image it is shown.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

from deskpilot.computer import fields
from deskpilot.computer.actions import ACTION_MODELS
from deskpilot.computer.geometry import SCREEN, Size

PREFIX = "computer_"

# Fields a client sets for itself, never a model: the screenshot size and format it wants, whether its
# write_file may replace a file (a model's always may, as the API's default has it), and the settling and
# screenshot an input action may ask for, and the pixels its coordinates are in (the agent sets them itself).
CLIENT_FIELDS = frozenset(
    {"scale", "width", "format", "quality", "region", "compression", "overwrite", "settle", "screenshot"}
    | {"evidence", "space"}
)

# Argument defaults of the MCP tools where the HTTP API has a required field: Bytebot's MCP tools wait 500 ms
# when not told, and clients written for them call computer_wait without a duration.
MCP_DEFAULTS: dict[str, dict[str, Any]] = {"wait": {"duration": 500}}

# Actions after which the screen may change, so a client acting on what it sees should look again.
CHANGES_SCREEN = frozenset(ACTION_MODELS) - {"screenshot", "cursor_position", "read_file", "write_file"}

KEY_NAMES = (
    "Key names are case-insensitive: ctrl, shift, alt, super, enter, esc, tab, space, backspace, delete, "
    "up, down, left, right, home, end, pgup, pgdn, insert, f1-f24, printscreen, any single character, "
    "or an X keysym name such as Page_Up or KP_5. A letter is its key in either case (C is the c key): "
    "name shift to get Shift."
)
APPLICATIONS = ", ".join(fields.APPLICATION_NAMES)
# What the action models' docstrings cannot say: when to prefer which tool.
GUIDANCE: dict[str, str] = {
    "click_mouse": "Omit coordinates to click where the pointer is.",
    "scroll": "One step is one mouse-wheel notch.",
    "type_keys": KEY_NAMES + f" For a chord such as copy, use {PREFIX}press_keys down then up.",
    "press_keys": KEY_NAMES,
    "type_text": f"Types like a keyboard into the focused window. For long text prefer {PREFIX}paste_text.",
    "paste_text": "Faster than typing for long text and reliable for any character; needs a window that "
    "accepts paste (ctrl+v, or ctrl+shift+v in terminals, chosen automatically).",
    "screenshot": "Call after acting to see the result.",
    "application": f"Launches the application if it is not running, otherwise focuses and maximises it "
    f"({APPLICATIONS}).",
    "write_file": f"data is base64. Relative paths are under {fields.DESKTOP_DIR}.",
    "read_file": f"Relative paths are under {fields.DESKTOP_DIR}; text comes back as text, images as images.",
}


def coordinates_note(space: Size, noun: str) -> str:
    return (
        f"Coordinates are pixels of the {space} {noun}: x 0-{space.width - 1} from the left, "
        f"y 0-{space.height - 1} from the top."
    )


@dataclass(frozen=True)
class ToolSpec:
    name: str
    action: str
    title: str
    description: str  # what the tool does and when to use it, without the pixel space
    model: type[BaseModel]

    @property
    def takes_coordinates(self) -> bool:
        return bool({"coordinates", "path"} & set(self.model.model_fields))

    def describe(self, space: Size, noun: str) -> str:
        if not self.takes_coordinates:
            return self.description
        return f"{self.description} {coordinates_note(space, noun)}"

    @property
    def mcp_defaults(self) -> dict[str, Any]:
        return MCP_DEFAULTS.get(self.action, {})

    def mcp_schema(self) -> dict[str, Any]:
        """The input schema for MCP: the action model's, without the ``action`` discriminator, with the
        ``MCP_DEFAULTS`` of the tool (no longer required)."""
        schema = self.model.model_json_schema()
        schema["properties"].pop("action", None)
        for name, value in self.mcp_defaults.items():
            schema["properties"][name]["default"] = value
        optional = {"action", *self.mcp_defaults}
        _set_required(schema, [f for f in schema.get("required", []) if f not in optional])
        schema.pop("title", None)
        schema.pop("description", None)
        return schema

    def llm_function(self, image: Size) -> dict[str, Any]:
        """An OpenAI function tool for a model that sees ``image``-sized screenshots."""
        params = inline_schema(self.model, drop={"action", *CLIENT_FIELDS})
        if image != SCREEN:
            params = _in_image_pixels(params, image)
        return function_tool(self.name, self.describe(image, "screenshots you are shown"), params)


def _spec(action: str, model: type[BaseModel]) -> ToolSpec:
    doc = " ".join((model.__doc__ or "").split()).replace("``", "")
    return ToolSpec(
        name=PREFIX + action,
        action=action,
        title=action.replace("_", " ").capitalize(),
        description=f"{doc} {GUIDANCE.get(action, '')}".strip(),
        model=model,
    )


TOOLS: dict[str, ToolSpec] = {PREFIX + a: _spec(a, m) for a, m in ACTION_MODELS.items()}


def tool_for(name: str) -> ToolSpec | None:
    return TOOLS.get(name)


# ------------------------------------------------------------------------------ JSON schema for LLM tools


def _inline(node: Any, defs: dict[str, Any]) -> Any:
    if isinstance(node, dict):
        if "$ref" in node:
            target = defs[node["$ref"].rsplit("/", 1)[-1]]
            merged = {**copy.deepcopy(target), **{k: v for k, v in node.items() if k != "$ref"}}
            return _inline(merged, defs)
        return {k: _inline(v, defs) for k, v in node.items() if k not in ("title", "$defs")}
    if isinstance(node, list):
        return [_inline(v, defs) for v in node]
    return node


def _set_required(schema: dict[str, Any], required: list[str]) -> None:
    if required:
        schema["required"] = required
    else:
        schema.pop("required", None)


def inline_schema(model: type[BaseModel], drop: Iterable[str] = ()) -> dict[str, Any]:
    """The JSON schema of `model` as a function's ``parameters``: refs inlined (Gemini and several local
    servers reject ``$ref``), pydantic's titles trimmed, `drop` fields removed."""
    schema = model.model_json_schema()
    out: dict[str, Any] = _inline(schema, schema.get("$defs", {}))
    dropped = set(drop)
    out["properties"] = {k: v for k, v in out.get("properties", {}).items() if k not in dropped}
    _set_required(out, [k for k in out.get("required", []) if k not in dropped])
    out.pop("description", None)
    out.setdefault("type", "object")
    return out


def function_tool(name: str, description: str, parameters: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {"name": name, "description": description, "parameters": parameters},
    }


def _in_image_pixels(node: Any, image: Size) -> Any:
    """The action models bound points to the screen; a model shown scaled screenshots works in `image`."""
    if isinstance(node, dict):
        props = node.get("properties")
        if isinstance(props, dict) and set(props) == {"x", "y"}:
            return {
                **node,
                "properties": {
                    "x": {
                        "type": "number",
                        "minimum": 0,
                        "maximum": image.width - 1,
                        "description": f"0..{image.width - 1}, pixels from the left of the screenshot",
                    },
                    "y": {
                        "type": "number",
                        "minimum": 0,
                        "maximum": image.height - 1,
                        "description": f"0..{image.height - 1}, pixels from the top of the screenshot",
                    },
                },
            }
        return {k: _in_image_pixels(v, image) for k, v in node.items()}
    if isinstance(node, list):
        return [_in_image_pixels(v, image) for v in node]
    return node
