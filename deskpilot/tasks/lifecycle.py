"""The task status machine: which moves exist, who may make them, and what each status sets on a task.

The moves (anything else is refused with 400, naming the allowed ones):

    PENDING      -> IN_PROGRESS (the queue only), CANCELLED
    IN_PROGRESS  -> NEEDS_HELP, NEEDS_REVIEW, COMPLETED, FAILED, CANCELLED
    NEEDS_HELP   -> IN_PROGRESS, PENDING, COMPLETED, FAILED, CANCELLED
    NEEDS_REVIEW -> COMPLETED, PENDING, FAILED, CANCELLED
    COMPLETED, FAILED, CANCELLED -> PENDING (run again)

A user's message on a NEEDS_HELP, NEEDS_REVIEW, COMPLETED or FAILED task re-queues it (PENDING), so the
agent continues the conversation.

Every step of a task's life is logged here, at INFO, once it is committed: created, claimed (or reclaimed
after its worker's lease ran out, a WARNING), each status change (a finished task's with its duration,
and its error when FAILED), handed back by a stopping worker, deleted. Fields: task, status, priority,
model, worker, desktop, and duration_s where it applies.
"""

from __future__ import annotations

import logging
from datetime import datetime
from typing import Any

from deskpilot.errors import InvalidTransition
from deskpilot.taskapi.types import FINISHED, TaskStatus
from deskpilot.tasks.models import Task

log = logging.getLogger(__name__)
ERROR_CHARS = 500  # of a FAILED task's error in its log line

TRANSITIONS: dict[TaskStatus, frozenset[TaskStatus]] = {
    TaskStatus.PENDING: frozenset({TaskStatus.IN_PROGRESS, TaskStatus.CANCELLED}),
    TaskStatus.IN_PROGRESS: frozenset(
        {
            TaskStatus.NEEDS_HELP,
            TaskStatus.NEEDS_REVIEW,
            TaskStatus.COMPLETED,
            TaskStatus.FAILED,
            TaskStatus.CANCELLED,
        }
    ),
    TaskStatus.NEEDS_HELP: frozenset(
        {
            TaskStatus.IN_PROGRESS,
            TaskStatus.PENDING,
            TaskStatus.COMPLETED,
            TaskStatus.FAILED,
            TaskStatus.CANCELLED,
        }
    ),
    TaskStatus.NEEDS_REVIEW: frozenset(
        {TaskStatus.COMPLETED, TaskStatus.PENDING, TaskStatus.FAILED, TaskStatus.CANCELLED}
    ),
    TaskStatus.COMPLETED: frozenset({TaskStatus.PENDING}),
    TaskStatus.FAILED: frozenset({TaskStatus.PENDING}),
    TaskStatus.CANCELLED: frozenset({TaskStatus.PENDING}),
}
QUEUE_ONLY = frozenset({(TaskStatus.PENDING, TaskStatus.IN_PROGRESS)})
REQUEUE_ON_MESSAGE = frozenset(
    {TaskStatus.NEEDS_HELP, TaskStatus.NEEDS_REVIEW, TaskStatus.COMPLETED, TaskStatus.FAILED}
)


def check_transition(current: str, new: str, *, by_queue: bool = False) -> None:
    """Raise InvalidTransition unless ``current -> new`` is allowed (the same status is a no-op)."""
    cur, nxt = TaskStatus(current), TaskStatus(new)
    if cur == nxt:
        return
    allowed = TRANSITIONS[cur]
    if (cur, nxt) in QUEUE_ONLY and not by_queue:
        shown = sorted(a.value for a in allowed if (cur, a) not in QUEUE_ONLY)
        raise InvalidTransition(
            f"Cannot move task from {cur} to {nxt}: the queue starts PENDING tasks itself when the desktop "
            f"is free. Allowed from {cur}: {', '.join(shown)}"
        )
    if nxt not in allowed:
        shown = sorted(a.value for a in allowed if by_queue or (cur, a) not in QUEUE_ONLY)
        raise InvalidTransition(
            f"Cannot move task from {cur} to {nxt}. Allowed from {cur}: {', '.join(shown) or 'none'}"
        )


def apply_status(task: Task, status: TaskStatus, now: datetime) -> None:
    """Set a status and the fields that go with it. Any move drops the lease: an IN_PROGRESS task without
    one goes to the next free worker (NEEDS_HELP -> IN_PROGRESS by a human)."""
    task.status = status
    task.lease_owner = task.lease_expires_at = None
    if status == TaskStatus.IN_PROGRESS:
        task.executed_at = task.executed_at or now
    if status in FINISHED:
        task.completed_at = now
    elif status == TaskStatus.PENDING:
        task.completed_at = None
        task.error = None


# ----------------------------------------------------------------------------------------------- logging


def _fields(task: Task, **extra: Any) -> dict[str, Any]:
    fields: dict[str, Any] = {"task": task.id, "status": task.status, "priority": task.priority}
    if task.model:
        fields["model"] = task.model
    if task.lease_owner:
        fields["worker"] = task.lease_owner
    if task.executed_on:
        fields["desktop"] = task.executed_on
    fields.update((k, v) for k, v in extra.items() if v is not None)
    return fields


def _seconds(since: datetime | None, now: datetime) -> float | None:
    return None if since is None else round((now - since).total_seconds(), 3)


def log_created(task: Task, files: int) -> None:
    log.info("task created", extra=_fields(task, type=task.type, by=task.created_by, files=files or None))


def log_claimed(task: Task, previous: str, previous_worker: str | None, now: datetime) -> None:
    """A worker took the task; ``previous``/``previous_worker`` are its status and lease owner before."""
    if previous == TaskStatus.IN_PROGRESS and previous_worker:
        log.warning(
            "task reclaimed: the lease of its worker ran out",
            extra=_fields(task, previous_worker=previous_worker, running_s=_seconds(task.executed_at, now)),
        )
    else:
        log.info(
            "task claimed", extra=_fields(task, previous=previous, waited_s=_seconds(task.created_at, now))
        )


def log_status(task: Task, previous: str, worker: str | None, now: datetime) -> None:
    """One line per status change (``worker``: who held the lease before it); a finished task's says how
    long it ran, from its first start."""
    if task.status not in FINISHED:
        log.info("task status changed", extra=_fields(task, previous=previous, worker=worker))
        return
    error = (task.error or "")[:ERROR_CHARS] if task.status == TaskStatus.FAILED else None
    message = "task cancelled" if task.status == TaskStatus.CANCELLED else "task finished"
    duration = _seconds(task.executed_at or task.created_at, now)
    log.info(message, extra=_fields(task, previous=previous, worker=worker, duration_s=duration, error=error))


def log_handed_back(task_id: str, worker: str) -> None:
    log.info("task handed back unfinished: its worker is stopping", extra={"task": task_id, "worker": worker})


def log_deleted(task: Task) -> None:
    log.info("task deleted", extra=_fields(task))
