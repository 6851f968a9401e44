"""The tools the model is given: one per desktop action (``computer_<action>``), plus ``set_task_status``
and ``create_task``.

The computer tools' schemas come from the desktop service's own pydantic action models
(``app.desktop.actions``), the same models ``POST /computer-use`` validates with, so the model, the
agent and the desktop can never disagree on a field. Only the descriptions are written here.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, Field

from app.agent.schema import function_tool, parameters_schema
from app.agent.screen import Size
from app.desktop.actions import ACTION_MODELS

PREFIX = "computer_"

# Request fields the agent sets itself (screenshot scaling and format), never the model.
AGENT_FIELDS = frozenset({"action", "scale", "width", "format", "quality"})

# Actions after which the screen may change: the agent waits for it to settle and sends a screenshot.
SETTLING = frozenset(ACTION_MODELS) - {"screenshot", "cursor_position", "read_file", "write_file"}

DESCRIPTIONS: dict[str, str] = {
    "move_mouse": "Move the mouse pointer to a point.",
    "trace_mouse": "Move the pointer along a path of points, optionally holding keys.",
    "click_mouse": "Click a mouse button, at `coordinates` if given (else where the pointer is); "
    "clickCount 2 is a double click, 3 a triple click.",
    "press_mouse": "Press or release a mouse button, at `coordinates` if given.",
    "drag_mouse": "Press a button at the first point of `path`, move along it, release at the last point.",
    "scroll": "Scroll `scrollCount` steps in a direction, at `coordinates` if given.",
    "type_keys": "Press and release keys one after the other (e.g. ['tab', 'tab', 'enter']).",
    "press_keys": "Hold keys down (press='down') or release them (press='up'); for chords like ctrl+c "
    "send down then up with the same keys.",
    "type_text": "Type text as if on a keyboard (any Unicode; \\n is Enter, \\t is Tab).",
    "paste_text": "Paste text through the clipboard; better than typing for long or unusual text.",
    "wait": "Wait `duration` milliseconds, e.g. for a page to load.",
    "screenshot": "Take a screenshot of the whole screen.",
    "cursor_position": "Report where the mouse pointer is.",
    "application": "Open or switch to an application and maximise it "
    "(terminal, browser, code_editor, directory, email_client, password_manager, desktop).",
    "write_file": "Write a file; `data` is base64. A relative path is under /home/user/Desktop.",
    "read_file": "Read a file (relative paths are under /home/user/Desktop); text comes back as text, "
    "images as images.",
}


class SetTaskStatus(BaseModel):
    """End this run: the task is done, needs a human's help or review, or cannot be done."""

    status: Literal["completed", "needs_help", "needs_review", "failed"]
    description: str = Field(
        description="For completed: what was done and the result. For needs_help: the question for the "
        "human. For needs_review: what to check. For failed: why it cannot be done."
    )


class CreateTask(BaseModel):
    """Queue a new task (it runs after this one)."""

    description: str = Field(description="What the new task should do, self-contained.")
    priority: Literal["LOW", "MEDIUM", "HIGH", "URGENT"] = "MEDIUM"
    scheduledFor: datetime | None = Field(default=None, description="ISO 8601 time to run it at, if later.")


AGENT_TOOLS: dict[str, type[BaseModel]] = {"set_task_status": SetTaskStatus, "create_task": CreateTask}


def tool_definitions(image: Size) -> list[dict[str, Any]]:
    """Every tool in OpenAI function format; coordinates are in the `image` the model is shown."""
    where = (
        f" Coordinates are pixels of the {image.width}x{image.height} screenshots you are shown "
        "(x to the right, y down, 0,0 top-left)."
    )
    out = []
    for action, model in ACTION_MODELS.items():
        params = parameters_schema(model, drop=AGENT_FIELDS)
        desc = DESCRIPTIONS.get(action) or (model.__doc__ or action).strip().splitlines()[0]
        if _has_coordinates(params):
            desc += where
            params = _in_image_pixels(params, image)
        out.append(function_tool(PREFIX + action, desc, params))
    for name, model in AGENT_TOOLS.items():
        out.append(function_tool(name, (model.__doc__ or name).strip(), parameters_schema(model)))
    return out


def _has_coordinates(params: dict[str, Any]) -> bool:
    return bool({"coordinates", "path"} & set(params.get("properties", {})))


def _in_image_pixels(node: Any, image: Size) -> Any:
    """The desktop's point schema speaks of the 1920x1080 screen; the model works in `image` pixels."""
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
