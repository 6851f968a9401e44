"""The task service as the UI reads it, through the typed client (``AsyncAgent``): its answers as the JSON
the templates and the pages' scripts know (the wire's camelCase), its failures as a person reads them."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from deskpilot.client.calls import TaskClientError
from deskpilot.taskapi.types import FINISHED, TaskStatus

# The status tabs of the task list: (key, label, statuses asked for).
FILTERS: list[tuple[str, str, list[TaskStatus]]] = [
    ("all", "All", []),
    ("active", "Active", [s for s in TaskStatus if s not in FINISHED]),
    ("attention", "Needs you", [TaskStatus.NEEDS_HELP, TaskStatus.NEEDS_REVIEW]),
    ("completed", "Completed", [TaskStatus.COMPLETED]),
    ("failed", "Failed / cancelled", [TaskStatus.FAILED, TaskStatus.CANCELLED]),
]


def statuses_for(filter_key: str) -> list[TaskStatus]:
    for key, _label, statuses in FILTERS:
        if key == filter_key:
            return statuses
    return []


def wire(model: BaseModel) -> dict[str, Any]:
    """An answer as the task service sent it: JSON types, camelCase names."""
    return model.model_dump(mode="json", by_alias=True)


def status_of(error: TaskClientError) -> int:
    """The status the UI answers with: the task service's own, or 502 when it did not answer."""
    return error.status or 502


def problem(error: TaskClientError) -> str:
    """What a person reads: the task service's message, or that it did not answer (and where it was)."""
    return error.detail if error.status else error.message
