"""The task API's vocabulary: statuses, priorities, types and roles, as they appear on the wire.

A leaf module (no database, no web framework): the UI and clients import it to speak the task API's
language without importing the service.
"""

from __future__ import annotations

import enum


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


FINISHED = frozenset({TaskStatus.COMPLETED, TaskStatus.FAILED, TaskStatus.CANCELLED})

# The kinds of event on the task service's WebSocket (/ws).
EVENT_KINDS = ("task_created", "task_updated", "task_deleted", "new_message")
