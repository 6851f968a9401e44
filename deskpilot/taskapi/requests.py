"""The task API's request bodies, camelCase on the wire, and their validation: the service validates what
it is sent with them, and documents them in OpenAPI."""

from __future__ import annotations

import math
import re
from datetime import datetime
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from deskpilot.taskapi.types import DESKTOP_NAME_PATTERN, Camel, Role, TaskPriority, TaskStatus, TaskType

_DATE_TIME = re.compile(r"^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}")


class FileIn(Camel):
    """A file sent inside a JSON create request."""

    name: str = Field(min_length=1, max_length=1024)
    data: str | None = Field(default=None, description="base64 of the content")
    base64: str | None = Field(default=None, description="alias of data")
    type: str | None = Field(default=None, description="media type; guessed from the name when omitted")


class TaskCreate(Camel):
    description: str = Field(min_length=1, max_length=100_000)
    priority: TaskPriority = TaskPriority.MEDIUM
    type: TaskType | None = Field(default=None, description="IMMEDIATE (default) or SCHEDULED")
    scheduled_for: datetime | None = Field(default=None, description="required for SCHEDULED; UTC if naive")
    model: str | None = Field(default=None, max_length=200, description="a `name` from GET /tasks/models")
    created_by: Role = Role.USER
    files: list[FileIn] = Field(default_factory=list)
    desktop: str | None = Field(
        default=None, pattern=DESKTOP_NAME_PATTERN, description="run only on this desktop (its name)"
    )
    desktop_label: str | None = Field(
        default=None, pattern=DESKTOP_NAME_PATTERN, description="run only on a desktop with this label"
    )

    @field_validator("scheduled_for", mode="before")
    @classmethod
    def _iso_only(cls, value: Any) -> Any:
        # pydantic would also take numbers and bare dates; the API promises ISO 8601 date-times only.
        if (
            value is not None
            and not isinstance(value, datetime)
            and not (isinstance(value, str) and _DATE_TIME.match(value))
        ):
            raise ValueError("must be an ISO 8601 date-time such as 2030-01-31T09:00:00Z")
        return value

    @field_validator("model", mode="before")
    @classmethod
    def _model_name(cls, value: Any) -> Any:
        # Clients may send the whole model object of GET /tasks/models; its name is what is stored.
        if isinstance(value, dict) and isinstance(value.get("name"), str):
            return value["name"]
        return value


class TaskPatch(Camel):
    status: TaskStatus | None = None
    priority: TaskPriority | None = None
    description: str | None = Field(default=None, min_length=1, max_length=100_000)


MAX_DEPTH = 200  # of nested arrays and objects in a content block (orjson writes at most 254)


def unstorable(value: Any, depth: int = 0) -> str | None:
    """Why a JSON value cannot be stored and served back, or None: integers must fit in 64 bits, numbers
    be finite (NaN and Infinity are not JSON), nesting stay within ``MAX_DEPTH``."""
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return None
    if isinstance(value, int):
        return None if -(2**63) <= value < 2**64 else f"the integer {value:.3e} does not fit in 64 bits"
    if isinstance(value, float):
        return None if math.isfinite(value) else f"{value} is not a JSON number"
    if depth >= MAX_DEPTH:
        return f"nested deeper than {MAX_DEPTH} levels"
    items = value.values() if isinstance(value, dict) else value
    return next((problem for item in items if (problem := unstorable(item, depth + 1))), None)


class ContentBlock(BaseModel):
    model_config = ConfigDict(extra="allow")
    type: str = Field(min_length=1)


class MessageCreate(Camel):
    content: (
        Annotated[str, Field(min_length=1, max_length=100_000, pattern=r"\S")]
        | Annotated[list[ContentBlock], Field(min_length=1)]
    ) = Field(description="text, or a list of content blocks")

    @field_validator("content")
    @classmethod
    def _storable(cls, value: Any) -> Any:
        # Stored as given and served by orjson: what it cannot write would break every later read of the
        # task, so it is refused here.
        if isinstance(value, list):
            for block in value:
                if problem := unstorable(block.model_dump()):
                    raise ValueError(f"cannot be stored: {problem}")
        return value

    def blocks(self) -> list[dict[str, Any]]:
        if isinstance(self.content, str):
            return [{"type": "text", "text": self.content}]
        return [b.model_dump() for b in self.content]
