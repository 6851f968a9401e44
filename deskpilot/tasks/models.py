"""The agent's tables as typed SQLAlchemy 2 models. The schema itself is created by Alembic migrations."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import (
    JSON,
    Boolean,
    DateTime,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    String,
    Text,
    TypeDecorator,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, relationship

from deskpilot.taskapi.types import Role, TaskPriority, TaskStatus, TaskType


def utcnow() -> datetime:
    return datetime.now(UTC)


def new_id() -> str:
    return str(uuid.uuid4())


class UTCDateTime(TypeDecorator[datetime]):
    """Aware UTC datetimes on every backend (SQLite stores naive text, PostgreSQL timestamptz)."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Any) -> datetime | None:
        if value is None:
            return None
        value = value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)
        return value.replace(tzinfo=None) if dialect.name == "sqlite" else value

    def process_result_value(self, value: datetime | None, dialect: Any) -> datetime | None:
        if value is None:
            return None
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


class Base(DeclarativeBase):
    pass


class Task(Base):
    __tablename__ = "tasks"

    id: Mapped[str] = mapped_column(String(36), primary_key=True, default=new_id)
    description: Mapped[str] = mapped_column(Text)
    status: Mapped[str] = mapped_column(String(16), default=TaskStatus.PENDING)
    priority: Mapped[str] = mapped_column(String(8), default=TaskPriority.MEDIUM)
    priority_rank: Mapped[int] = mapped_column(Integer, default=1)
    type: Mapped[str] = mapped_column(String(16), default=TaskType.IMMEDIATE)
    scheduled_for: Mapped[datetime | None] = mapped_column(UTCDateTime)
    model: Mapped[str | None] = mapped_column(String(200))
    control: Mapped[str] = mapped_column(String(16), default=Role.ASSISTANT)
    created_by: Mapped[str] = mapped_column(String(16), default=Role.USER)
    error: Mapped[str | None] = mapped_column(Text)
    result: Mapped[Any | None] = mapped_column(JSON)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    executed_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    completed_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    # The worker that owns an IN_PROGRESS task, until lease_expires_at (renewed by its heartbeat).
    lease_owner: Mapped[str | None] = mapped_column(String(200))
    lease_expires_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    # Placement: the desktop (by name) or a label the desktop must have; neither: any free desktop.
    desktop: Mapped[str | None] = mapped_column(String(63))
    desktop_label: Mapped[str | None] = mapped_column(String(63))
    # The desktop that runs (or last ran) the task, set at each claim.
    executed_on: Mapped[str | None] = mapped_column(String(63))
    # When the frames of its conversation were dropped, its trajectory past retention (tasks/retention.py).
    frames_dropped_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    # The model's tokens the task used (what the provider reported for each call), for costs and evaluation.
    prompt_tokens: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    completion_tokens: Mapped[int] = mapped_column(Integer, default=0, server_default="0")

    messages: Mapped[list[Message]] = relationship(
        back_populates="task",
        cascade="all, delete-orphan",
        passive_deletes=True,
        order_by="Message.created_at",
    )
    files: Mapped[list[TaskFile]] = relationship(
        back_populates="task", cascade="all, delete-orphan", passive_deletes=True, order_by="TaskFile.name"
    )

    __table_args__ = (
        Index("ix_tasks_queue", "status", "priority_rank", "created_at"),
        Index("ix_tasks_created_at", "created_at", "id"),
        Index("ix_tasks_status_created_at", "status", "created_at", "id"),
    )


class Message(Base):
    __tablename__ = "messages"

    id: Mapped[str] = mapped_column(String(36), primary_key=True, default=new_id)
    task_id: Mapped[str] = mapped_column(ForeignKey("tasks.id", ondelete="CASCADE"))
    role: Mapped[str] = mapped_column(String(16))
    # A list of content blocks: {"type": "text", "text": ...}, {"type": "image", "source": {...}}, ...
    content: Mapped[list[dict[str, Any]]] = mapped_column(JSON)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)

    task: Mapped[Task] = relationship(back_populates="messages")

    __table_args__ = (Index("ix_messages_task_created", "task_id", "created_at"),)


class Summary(Base):
    """A summary of part of a task's history; parent_id chains summaries of summaries."""

    __tablename__ = "summaries"

    id: Mapped[str] = mapped_column(String(36), primary_key=True, default=new_id)
    task_id: Mapped[str] = mapped_column(ForeignKey("tasks.id", ondelete="CASCADE"), index=True)
    content: Mapped[str] = mapped_column(Text)
    parent_id: Mapped[str | None] = mapped_column(ForeignKey("summaries.id", ondelete="SET NULL"))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class TaskFile(Base):
    """A file uploaded with a task; its bytes live in the database until written onto the desktop."""

    __tablename__ = "task_files"

    id: Mapped[str] = mapped_column(String(36), primary_key=True, default=new_id)
    task_id: Mapped[str] = mapped_column(ForeignKey("tasks.id", ondelete="CASCADE"), index=True)
    name: Mapped[str] = mapped_column(String(255))
    media_type: Mapped[str] = mapped_column(String(255))
    size: Mapped[int] = mapped_column(Integer)
    data: Mapped[bytes] = mapped_column(LargeBinary)
    # Absolute path on the desktop: the one announced at creation, corrected when the file is written under
    # another name because that one was taken (the desktop never replaces a file for an upload).
    desktop_path: Mapped[str] = mapped_column(String(1024))
    written_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)

    task: Mapped[Task] = relationship(back_populates="files")


class FleetDesktop(Base):
    """A desktop of the fleet as its worker last announced it (``deskpilot.tasks.desktops``)."""

    __tablename__ = "desktops"

    name: Mapped[str] = mapped_column(String(63), primary_key=True)
    labels: Mapped[list[str]] = mapped_column(JSON, default=list)
    # Where the desktop service answers for the rest of the fleet (the UI's live view of it).
    url: Mapped[str] = mapped_column(String(1024))
    worker_id: Mapped[str] = mapped_column(String(200))
    healthy: Mapped[bool] = mapped_column(Boolean, default=True)
    problem: Mapped[str | None] = mapped_column(Text)  # why the desktop service is not healthy
    # A human is using the desktop: its worker claims no new task until released.
    taken_over: Mapped[bool] = mapped_column(Boolean, default=False)
    started_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    seen_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    # Renewed by every heartbeat; a desktop not seen by then is unhealthy (its worker died or hangs).
    expires_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
