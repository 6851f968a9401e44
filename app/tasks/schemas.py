"""The agent API's JSON, camelCase on the wire. Input models validate; output is built by plain functions
(``task_json`` ...) because they sit on the hot path, and the output models document it in OpenAPI."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator
from pydantic.alias_generators import to_camel

from app.tasks.models import Message, Task, TaskFile
from app.tasks.types import Role, TaskPriority, TaskStatus, TaskType

_DATE_TIME = re.compile(r"^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}")


class _Camel(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True)


# --------------------------------------------------------------------------------------------- input


class FileIn(_Camel):
    """A file sent inside a JSON create request."""

    name: str = Field(min_length=1, max_length=1024)
    data: str | None = Field(default=None, description="base64 of the content")
    base64: str | None = Field(default=None, description="alias of data")
    type: str | None = Field(default=None, description="media type; guessed from the name when omitted")


class TaskCreate(_Camel):
    description: str = Field(min_length=1, max_length=100_000)
    priority: TaskPriority = TaskPriority.MEDIUM
    type: TaskType | None = Field(default=None, description="IMMEDIATE (default) or SCHEDULED")
    scheduled_for: datetime | None = Field(default=None, description="required for SCHEDULED; UTC if naive")
    model: str | None = Field(default=None, max_length=200, description="a `name` from GET /tasks/models")
    created_by: Role = Role.USER
    files: list[FileIn] = Field(default_factory=list)

    @field_validator("scheduled_for", mode="before")
    @classmethod
    def _iso_only(cls, v: Any) -> Any:
        # pydantic would also take numbers and bare dates; the API promises ISO 8601 date-times only.
        if v is not None and not isinstance(v, datetime) and not (isinstance(v, str) and _DATE_TIME.match(v)):
            raise ValueError("must be an ISO 8601 date-time such as 2030-01-31T09:00:00Z")
        return v

    @field_validator("model", mode="before")
    @classmethod
    def _model_name(cls, v: Any) -> Any:
        # Clients may send the whole model object of GET /tasks/models; its name is what is stored.
        if isinstance(v, dict) and isinstance(v.get("name"), str):
            return v["name"]
        return v


class TaskPatch(_Camel):
    status: TaskStatus | None = None
    priority: TaskPriority | None = None
    description: str | None = Field(default=None, min_length=1, max_length=100_000)


class ContentBlock(BaseModel):
    model_config = ConfigDict(extra="allow")
    type: str = Field(min_length=1)


class MessageCreate(_Camel):
    content: (
        Annotated[str, Field(min_length=1, max_length=100_000, pattern=r"\S")]
        | Annotated[list[ContentBlock], Field(min_length=1)]
    ) = Field(description="text, or a list of content blocks")

    def blocks(self) -> list[dict[str, Any]]:
        if isinstance(self.content, str):
            return [{"type": "text", "text": self.content}]
        return [b.model_dump() for b in self.content]


# -------------------------------------------------------------------------------------------- output


class TaskOut(_Camel):
    id: str
    description: str
    status: TaskStatus
    priority: TaskPriority
    type: TaskType
    scheduled_for: datetime | None
    model: str | None
    control: Role
    created_by: Role
    error: str | None
    result: Any | None = None
    created_at: datetime
    updated_at: datetime
    executed_at: datetime | None
    completed_at: datetime | None


class MessageOut(_Camel):
    id: str
    task_id: str
    role: Role
    content: list[dict[str, Any]]
    created_at: datetime
    updated_at: datetime


class FileOut(_Camel):
    id: str
    name: str
    media_type: str
    size: int
    path: str = Field(description="where the file is (or will be) on the desktop")
    written_at: datetime | None = Field(description="when it was written onto the desktop")
    created_at: datetime


class TaskDetail(TaskOut):
    messages: list[MessageOut]
    files: list[FileOut]


class ModelOut(_Camel):
    provider: str
    name: str
    title: str
    context_window: int | None = None


class ErrorOut(BaseModel):
    statusCode: int
    message: str
    error: str


class Health(BaseModel):
    status: Literal["ok"]
    version: str
    database: str
    worker: bool


def iso(dt: datetime | None) -> str | None:
    """ISO 8601 UTC with milliseconds and a Z, as JavaScript prints dates."""
    if dt is None:
        return None
    return dt.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def task_json(t: Task) -> dict[str, Any]:
    return {
        "id": t.id,
        "description": t.description,
        "status": t.status,
        "priority": t.priority,
        "type": t.type,
        "scheduledFor": iso(t.scheduled_for),
        "model": t.model,
        "control": t.control,
        "createdBy": t.created_by,
        "error": t.error,
        "result": t.result,
        "createdAt": iso(t.created_at),
        "updatedAt": iso(t.updated_at),
        "executedAt": iso(t.executed_at),
        "completedAt": iso(t.completed_at),
    }


def message_json(m: Message) -> dict[str, Any]:
    return {
        "id": m.id,
        "taskId": m.task_id,
        "role": m.role,
        "content": m.content,
        "createdAt": iso(m.created_at),
        "updatedAt": iso(m.updated_at),
    }


def file_json(f: TaskFile) -> dict[str, Any]:
    return {
        "id": f.id,
        "name": f.name,
        "mediaType": f.media_type,
        "size": f.size,
        "path": f.desktop_path,
        "writtenAt": iso(f.written_at),
        "createdAt": iso(f.created_at),
    }


def task_detail_json(t: Task, messages: list[Message], files: list[TaskFile]) -> dict[str, Any]:
    return {
        **task_json(t),
        "messages": [message_json(m) for m in messages],
        "files": [file_json(f) for f in files],
    }
