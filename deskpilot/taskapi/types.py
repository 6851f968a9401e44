"""The task API's vocabulary: statuses, priorities, types and roles, and the shapes of what it answers
(tasks, messages, files, models), as they appear on the wire.

Part of the contract (``deskpilot.taskapi``): the UI and clients (``deskpilot.client``) import it to speak
the task API's language without importing the service. The service documents its answers in OpenAPI with
these models and writes them with plain functions (``deskpilot.tasks.schemas``); the API's fuzz test checks
every answer against them.
"""

from __future__ import annotations

import enum
from datetime import UTC, datetime
from typing import Annotated, Any, Literal, NamedTuple

from pydantic import BaseModel, ConfigDict, Field, PlainSerializer
from pydantic.alias_generators import to_camel


class TaskStatus(enum.StrEnum):
    PENDING = "PENDING"
    IN_PROGRESS = "IN_PROGRESS"
    NEEDS_HELP = "NEEDS_HELP"
    NEEDS_REVIEW = "NEEDS_REVIEW"
    COMPLETED = "COMPLETED"
    CANCELLED = "CANCELLED"
    FAILED = "FAILED"


class TaskPriority(enum.StrEnum):
    """In ascending order: the queue takes URGENT first."""

    LOW = "LOW"
    MEDIUM = "MEDIUM"
    HIGH = "HIGH"
    URGENT = "URGENT"

    @property
    def rank(self) -> int:
        """Stored beside the priority so the queue can ORDER BY an indexed integer."""
        return list(TaskPriority).index(self)


class TaskType(enum.StrEnum):
    IMMEDIATE = "IMMEDIATE"
    SCHEDULED = "SCHEDULED"


class Role(enum.StrEnum):
    USER = "USER"
    ASSISTANT = "ASSISTANT"


class DesktopState(enum.StrEnum):
    """What a desktop of the fleet is doing (``GET /desktops``)."""

    IDLE = "idle"
    RUNNING = "running"
    TAKEN_OVER = "taken_over"
    UNHEALTHY = "unhealthy"


# A desktop's name and a label: what a host name or a Kubernetes pod name can be (the UI puts it in paths).
DESKTOP_NAME_PATTERN = r"^[A-Za-z0-9]([A-Za-z0-9_.-]{0,61}[A-Za-z0-9])?$"

FINISHED = frozenset({TaskStatus.COMPLETED, TaskStatus.FAILED, TaskStatus.CANCELLED})

# The kinds of event on the task service's WebSocket (/ws).
EVENT_KINDS = ("task_created", "task_updated", "task_deleted", "new_message")


# ------------------------------------------------------------------------------------------ answers


def iso(dt: datetime | None) -> str | None:
    """An instant as the task API writes it: ISO 8601 in UTC with milliseconds and a Z, as JavaScript prints
    dates (so two of them compare as strings)."""
    if dt is None:
        return None
    return dt.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


Instant = Annotated[datetime, PlainSerializer(iso, return_type=str, when_used="json")]


class Camel(BaseModel):
    """camelCase on the wire, snake_case in Python (either is accepted)."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True)


class TokenUsage(Camel):
    """What the provider reported for the task's model calls (summaries included)."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    total_tokens: int = 0


class TaskOut(Camel):
    id: str
    description: str
    status: TaskStatus
    priority: TaskPriority
    type: TaskType
    scheduled_for: Instant | None
    model: str | None
    control: Role
    created_by: Role
    error: str | None
    result: Any | None = None
    created_at: Instant
    updated_at: Instant
    executed_at: Instant | None
    completed_at: Instant | None
    desktop: str | None = Field(default=None, description="the desktop the task must run on")
    desktop_label: str | None = Field(default=None, description="a label the desktop must have")
    executed_on: str | None = Field(default=None, description="the desktop that runs or last ran the task")
    usage: TokenUsage = Field(default_factory=lambda: TokenUsage(), description="the model's tokens it used")


class MessageOut(Camel):
    id: str
    task_id: str
    role: Role
    content: list[dict[str, Any]]
    created_at: Instant
    updated_at: Instant

    @property
    def text(self) -> str:
        """The message's text blocks, joined by blank lines."""
        return "\n\n".join(str(b.get("text", "")) for b in self.content if b.get("type") == "text")


class FileOut(Camel):
    id: str
    name: str
    media_type: str
    size: int
    path: str = Field(description="where the file is (or will be) on the desktop")
    written_at: Instant | None = Field(description="when it was written onto the desktop")
    created_at: Instant


class TaskDetail(TaskOut):
    messages: list[MessageOut]
    files: list[FileOut]


class ModelOut(Camel):
    provider: str
    name: str
    title: str
    context_window: int | None = None


class DesktopTask(Camel):
    id: str
    description: str
    control: Role


class DesktopOut(Camel):
    """A desktop of the fleet (``GET /desktops``)."""

    name: str
    labels: list[str]
    url: str = Field(description="where its desktop service answers for the fleet (the UI's live view)")
    state: DesktopState
    problem: str | None = Field(description="why it is unhealthy")
    taken_over: bool = Field(description="a human took the desktop: it claims no new task")
    task: DesktopTask | None = Field(description="the task it runs")
    worker_id: str
    started_at: Instant
    seen_at: Instant


class TaskPage(NamedTuple):
    """One page of the task list (``GET /tasks``) and how many tasks the filter holds in all
    (``X-Total-Count``)."""

    tasks: list[TaskOut]
    total: int


class ErrorOut(BaseModel):
    statusCode: int
    message: str
    error: str


class Health(BaseModel):
    """``status`` to anyone; the rest only with the token."""

    status: Literal["ok", "degraded"]
    version: str | None = None
    database: str | None = None
    worker: bool | None = None
    problems: dict[str, str] | None = None  # degraded: what is wrong, per probe
