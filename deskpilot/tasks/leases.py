"""The queue's statements: claiming the next task, renewing and releasing its lease.

One worker per desktop holds at most one task. A claim is one atomic UPDATE, so several workers (on one
machine or many, sharing one PostgreSQL) never take the same task; a worker that dies stops renewing its
lease and the task goes to the next worker once the lease runs out. A worker takes only the tasks its
desktop may run (placement, ``deskpilot.tasks.desktops``) and none while a human has taken its desktop over.
A task claimed on another desktop than the one it last ran on starts over there: its files are written
again and its conversation says so.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from sqlalchemy import ColumnElement, Row, Select, and_, exists, func, or_, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from deskpilot.taskapi.types import Role, TaskStatus
from deskpilot.tasks.desktops import Identity
from deskpilot.tasks.events import Event
from deskpilot.tasks.lifecycle import apply_status, log_claimed, log_handed_back, log_status
from deskpilot.tasks.models import FleetDesktop, Message, Task, TaskFile, new_id
from deskpilot.tasks.store import Store


class Leases:
    """Claims and leases on the tasks of one ``Store``."""

    def __init__(self, store: Store) -> None:
        self.store = store

    async def claim_next(
        self, worker_id: str, lease_seconds: float, desktop: Identity | None = None
    ) -> Task | None:
        """Atomically take the next task ``desktop`` may run and lease it to ``worker_id``; None when
        nothing is due (or a human has taken the desktop over). Without ``desktop``: unplaced tasks only.

        Due are: IN_PROGRESS tasks nobody holds a live lease on (their worker died, or a human moved
        them back from NEEDS_HELP), then PENDING tasks whose schedule has come, highest priority first,
        oldest first. The pick and the UPDATE run in one transaction: atomic on SQLite (one writer,
        BEGIN IMMEDIATE), and with FOR UPDATE SKIP LOCKED concurrent workers on PostgreSQL never take
        the same row. The pick also reads what the lease replaces, for the log.
        """
        moved: Message | None = None
        async with self.store.writing() as session:
            now = self.store.now()
            pick = _pick(now, sqlite=self.store.db.sqlite).where(*_placement(desktop))
            picked = (await session.execute(pick)).first()
            if picked is None:
                return None
            # Never stamp the claim older than the change it follows (a human's reply re-queued the task
            # while this worker waited for the write lock): clients order a task's updates by updatedAt.
            now = max(now, picked.updated_at + timedelta(microseconds=1))
            claim = (
                update(Task)
                .where(Task.id == picked.id)
                .values(
                    status=TaskStatus.IN_PROGRESS,
                    lease_owner=worker_id,
                    lease_expires_at=now + timedelta(seconds=lease_seconds),
                    executed_at=func.coalesce(Task.executed_at, now),
                    executed_on=desktop.name if desktop else Task.executed_on,
                    updated_at=now,
                )
                .returning(Task)
                .execution_options(synchronize_session=False)
            )
            task = (await session.scalars(claim)).one()
            if desktop is not None and picked.executed_on not in (None, desktop.name):
                moved = await _start_over(session, task, picked)
        log_claimed(task, picked.status, picked.lease_owner, now)
        self.store.emit(Event.task_updated(task))
        if moved is not None:
            self.store.emit(Event.new_message(moved))
        return task

    async def heartbeat(self, task_id: str, worker_id: str, lease_seconds: float) -> bool:
        """Extend the lease; False when the task is no longer IN_PROGRESS under this worker's lease."""
        exp = self.store.now() + timedelta(seconds=lease_seconds)
        async with self.store.writing() as session:
            renewed = await session.scalar(
                update(Task)
                .where(
                    Task.id == task_id, Task.lease_owner == worker_id, Task.status == TaskStatus.IN_PROGRESS
                )
                .values(lease_expires_at=exp)
                .returning(Task.id)
                .execution_options(synchronize_session=False)
            )
        return renewed is not None

    async def release(
        self, task_id: str, worker_id: str, *, unfinished_error: str | None = None
    ) -> Task | None:
        """The worker is done with the task: drop its lease. If the task is still IN_PROGRESS under this
        worker, it failed (``unfinished_error``) — an executor must leave it in another status."""
        async with self.store.writing() as session:
            task = await session.get(Task, task_id, with_for_update=True)
            if task is None or task.lease_owner != worker_id:
                return task
            now = self.store.now()
            changed = False
            if task.status == TaskStatus.IN_PROGRESS:
                apply_status(task, TaskStatus.FAILED, now)
                task.error = unfinished_error or "the agent stopped without finishing the task"
                changed = True
            task.lease_owner = task.lease_expires_at = None
            task.updated_at = now
            await self.store.notify(session, task_id)
        if changed:
            log_status(task, TaskStatus.IN_PROGRESS, worker_id, now)
            self.store.emit(Event.task_updated(task))
        return task

    async def abandon(self, task_id: str, worker_id: str) -> None:
        """Hand an IN_PROGRESS task back unfinished (worker shutdown): the next worker resumes it."""
        async with self.store.writing() as session:
            handed = await session.scalar(
                update(Task)
                .where(
                    Task.id == task_id, Task.lease_owner == worker_id, Task.status == TaskStatus.IN_PROGRESS
                )
                .values(lease_owner=None, lease_expires_at=None)
                .returning(Task.id)
                .execution_options(synchronize_session=False)
            )
            await self.store.notify(session, task_id)
        if handed is not None:
            log_handed_back(task_id, worker_id)

    async def next_due_at(self) -> datetime | None:
        """When the queue next changes by itself: a scheduled task comes due or a lease expires."""
        async with self.store.reading() as session:
            sched = await session.scalar(
                select(func.min(Task.scheduled_for)).where(
                    Task.status == TaskStatus.PENDING, Task.scheduled_for.is_not(None)
                )
            )
            lease = await session.scalar(
                select(func.min(Task.lease_expires_at)).where(
                    Task.status == TaskStatus.IN_PROGRESS, Task.lease_expires_at.is_not(None)
                )
            )
        found = [t for t in (sched, lease) if t is not None]
        return min(found) if found else None


def _placement(desktop: Identity | None) -> list[ColumnElement[bool]]:
    """The tasks ``desktop`` may run: unplaced ones, those naming it, those asking for one of its labels;
    none while a human has taken it over."""
    if desktop is None:
        return [Task.desktop.is_(None), Task.desktop_label.is_(None)]
    label = or_(Task.desktop_label.is_(None), Task.desktop_label.in_(desktop.labels))
    taken = exists().where(FleetDesktop.name == desktop.name, FleetDesktop.taken_over.is_(True))
    return [or_(Task.desktop.is_(None), Task.desktop == desktop.name), label, ~taken]


async def _start_over(
    session: AsyncSession, task: Task, picked: Row[str, str, str | None, datetime, str | None]
) -> Message:
    """The task moves to another desktop: nothing done on the previous one is there, so its files are
    written again, and its conversation (what the model and the UI read) says so."""
    await session.execute(update(TaskFile).where(TaskFile.task_id == task.id).values(written_at=None))
    previous = picked.executed_on
    why = (
        f"Desktop {previous} stopped answering while it ran this task (its lease ran out), so the task "
        if picked.status == TaskStatus.IN_PROGRESS and picked.lease_owner
        else f"This task ran on desktop {previous} before; it "
    )
    text = (
        f"{why}starts over on desktop {task.executed_on}. Nothing done on {previous}'s screen is here, and "
        "the task's files are written again."
    )
    note = Message(
        id=new_id(),
        task_id=task.id,
        role=Role.USER,
        content=[{"type": "text", "text": text}],
        created_at=task.updated_at,
        updated_at=task.updated_at,
    )
    session.add(note)
    return note


def _pick(now: datetime, *, sqlite: bool) -> Select[str, str, str | None, datetime, str | None]:
    """The next due task: IN_PROGRESS ones nobody holds a live lease on first, then PENDING ones whose
    schedule has come, highest priority first, oldest first."""
    due = or_(
        and_(
            Task.status == TaskStatus.PENDING,
            or_(Task.scheduled_for.is_(None), Task.scheduled_for <= now),
        ),
        and_(
            Task.status == TaskStatus.IN_PROGRESS,
            or_(Task.lease_expires_at.is_(None), Task.lease_expires_at <= now),
        ),
    )
    pick = (
        select(Task.id, Task.status, Task.lease_owner, Task.updated_at, Task.executed_on)
        .where(due)
        .order_by(
            (Task.status == TaskStatus.IN_PROGRESS).desc(),
            Task.priority_rank.desc(),
            Task.created_at,
            Task.id,
        )
        .limit(1)
    )
    if not sqlite:
        pick = pick.with_for_update(skip_locked=True)
    return pick
