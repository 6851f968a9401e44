"""The tools the model is given: every desktop tool of the one table (``deskpilot.computer.tools``), rendered
in the pixels of the screenshots the model sees, plus the agent's own ``set_task_status`` and
``create_task``."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, Field

from deskpilot.computer.geometry import Size
from deskpilot.computer.tools import TOOLS, function_tool, inline_schema
from deskpilot.tasks.types import TaskPriority


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


AGENT_TOOLS: dict[str, type[BaseModel]] = {"set_task_status": SetTaskStatus, "create_task": CreateTask}


def tool_definitions(image: Size) -> list[dict[str, Any]]:
    """Every tool in OpenAI function format; coordinates are in the `image` the model is shown."""
    out = [spec.llm_function(image) for spec in TOOLS.values()]
    for name, model in AGENT_TOOLS.items():
        out.append(function_tool(name, (model.__doc__ or name).strip(), inline_schema(model)))
    return out
