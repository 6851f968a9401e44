"""The task status machine: which moves exist, who may make them, and what each status sets on a task.

The moves (anything else is refused with 400, naming the allowed ones):

    PENDING      -> IN_PROGRESS (the queue only), CANCELLED
    IN_PROGRESS  -> NEEDS_HELP, NEEDS_REVIEW, COMPLETED, FAILED, CANCELLED
    NEEDS_HELP   -> IN_PROGRESS, PENDING, COMPLETED, FAILED, CANCELLED
    NEEDS_REVIEW -> COMPLETED, PENDING, FAILED, CANCELLED
    COMPLETED, FAILED, CANCELLED -> PENDING (run again)

A user's message on a NEEDS_HELP, NEEDS_REVIEW, COMPLETED or FAILED task re-queues it (PENDING), so the
agent continues the conversation.
"""

from __future__ import annotations

from datetime import datetime

from app.errors import InvalidTransition
from app.tasks.models import Task
from app.tasks.types import FINISHED, TaskStatus

S = TaskStatus
TRANSITIONS: dict[TaskStatus, frozenset[TaskStatus]] = {
    S.PENDING: frozenset({S.IN_PROGRESS, S.CANCELLED}),
    S.IN_PROGRESS: frozenset({S.NEEDS_HELP, S.NEEDS_REVIEW, S.COMPLETED, S.FAILED, S.CANCELLED}),
    S.NEEDS_HELP: frozenset({S.IN_PROGRESS, S.PENDING, S.COMPLETED, S.FAILED, S.CANCELLED}),
    S.NEEDS_REVIEW: frozenset({S.COMPLETED, S.PENDING, S.FAILED, S.CANCELLED}),
    S.COMPLETED: frozenset({S.PENDING}),
    S.FAILED: frozenset({S.PENDING}),
    S.CANCELLED: frozenset({S.PENDING}),
}
QUEUE_ONLY = frozenset({(S.PENDING, S.IN_PROGRESS)})
REQUEUE_ON_MESSAGE = frozenset({S.NEEDS_HELP, S.NEEDS_REVIEW, S.COMPLETED, S.FAILED})


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
    if status == S.IN_PROGRESS:
        task.executed_at = task.executed_at or now
    if status in FINISHED:
        task.completed_at = now
    elif status == S.PENDING:
        task.completed_at = None
        task.error = None
