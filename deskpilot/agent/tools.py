"""The tools the model is given: every desktop tool of the one table (``deskpilot.computer.tools``), rendered
in the pixels of the screenshots the model sees, plus the agent's own ``set_task_status``, ``create_task``,
``zoom`` (a region magnified; the pointing tools then take ``inZoom`` to act on its pixels) and ``elements``
(the focused window's accessibility tree as a few lines of text, in place of ``computer_accessibility``)."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, Field

from deskpilot.computer.geometry import Size
from deskpilot.computer.tools import TOOLS, function_tool, inline_schema
from deskpilot.taskapi.types import TaskPriority


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
    priority: TaskPriority = TaskPriority.MEDIUM
    scheduledFor: datetime | None = Field(default=None, description="ISO 8601 time to run it at, if later.")


class Zoom(BaseModel):
    """Look closer: a region of the screen, magnified to the width of your screenshots (small text, icons,
    a crowded menu). Give the region in screenshot pixels. To act on something you see in the zoomed image,
    call the pointing tool with inZoom: true and coordinates in the zoomed image's pixels."""

    x: int = Field(ge=0, description="left edge of the region, in screenshot pixels")
    y: int = Field(ge=0, description="top edge of the region, in screenshot pixels")
    width: int = Field(ge=8, description="width of the region, in screenshot pixels")
    height: int = Field(ge=8, description="height of the region, in screenshot pixels")


class Elements(BaseModel):
    """List the controls of the focused window, read from its accessibility tree: one line per element a
    user can act on, with its role, its name and its centre in screenshot pixels (where to click it). Call
    it when the screenshot is ambiguous: which icon is which button, what a field is for, text too small to
    read. Some applications expose no tree; then use the screenshot."""


AGENT_TOOLS: dict[str, type[BaseModel]] = {
    "set_task_status": SetTaskStatus,
    "create_task": CreateTask,
    "zoom": Zoom,
    "elements": Elements,
}
# Desktop actions the model does not get raw: the accessibility tree's JSON would cost thousands of tokens
# a call (``elements`` is its bounded rendering), and the ids it holds are what ``element`` takes.
HIDDEN_ACTIONS = frozenset({"accessibility"})
HIDDEN_FIELDS = ("element",)
IN_ZOOM = {
    "type": "boolean",
    "description": "the coordinates are pixels of the last zoom image, not of the screenshot",
}


def tool_definitions(image: Size) -> list[dict[str, Any]]:
    """Every tool in OpenAI function format; coordinates are in the `image` the model is shown, or in the
    last zoom's with ``inZoom``."""
    out = [spec.llm_function(image) for spec in TOOLS.values() if spec.action not in HIDDEN_ACTIONS]
    for tool in out:
        properties = tool["function"]["parameters"].get("properties", {})
        for name in HIDDEN_FIELDS:
            properties.pop(name, None)
        if "coordinates" in properties or "path" in properties:
            properties["inZoom"] = IN_ZOOM
    for name, model in AGENT_TOOLS.items():
        out.append(function_tool(name, (model.__doc__ or name).strip(), inline_schema(model)))
    return out
