"""Data access for tasks, messages, files and summaries: one AsyncSession per unit of work.

Every change is committed first and then announced to the in-process listeners (the WebSocket hub,
the worker's wake-up) as ``(event, data)`` with the events of DESIGN.md §3. On PostgreSQL, changes that
may concern the queue also ``NOTIFY deskpilot_tasks`` so workers in other processes wake up.
"""

from __future__ import annotations

import mimetypes
import posixpath
import re
import unicodedata
from collections.abc import AsyncIterator, Callable, Iterable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import and_, func, or_, select, text, update
from sqlalchemy.ext.asyncio import AsyncSession

from app.agent.db import Database
from app.agent.models import (
    FINISHED,
    PRIORITY_RANK,
    Message,
    Role,
    Summary,
    Task,
    TaskFile,
    TaskPriority,
    TaskStatus,
    TaskType,
    new_id,
    utcnow,
)
from app.agent.schemas import message_json, task_json
from app.errors import BadRequest, InvalidTransition, TaskNotFound

NOTIFY_CHANNEL = "deskpilot_tasks"

S = TaskStatus
# DESIGN.md §3: the only status moves there are. PENDING -> IN_PROGRESS is the queue's alone.
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
# A user message on a task in one of these states re-queues it so the agent continues the conversation.
REQUEUE_ON_MESSAGE = frozenset({S.NEEDS_HELP, S.NEEDS_REVIEW, S.COMPLETED, S.FAILED})

_ORDER = ", ".join(s.value for s in TaskStatus)


def check_transition(current: str, new: str, *, by_queue: bool = False) -> None:
    """Raise InvalidTransition unless DESIGN.md §3 allows ``current -> new`` (same status is a no-op)."""
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


# ------------------------------------------------------------------------------------------------ files

_UNSAFE = re.compile(r"[\x00-\x1f\x7f/\\:*?\"<>|]+")


def safe_name(name: str) -> str:
    """Reduce an uploaded file name to a safe basename: no directories, no control or shell-hostile
    characters, no leading dots, at most 255 bytes; never empty."""
    name = unicodedata.normalize("NFC", name).replace("\\", "/")
    name = posixpath.basename(name.rstrip("/"))
    name = _UNSAFE.sub("_", name).strip().lstrip(".").strip()
    if not name:
        name = "file"
    stem, dot, ext = name.rpartition(".")
    if not dot:
        stem, ext = name, ""
    while len(name.encode()) > 255:
        stem = stem[:-1]
        name = f"{stem}.{ext}" if ext else stem
        if not stem:
            name = name[:255]
            break
    return name


def unique_names(names: Iterable[str]) -> list[str]:
    """Make names unique within one task: report.pdf, report (2).pdf, ..."""
    seen: set[str] = set()
    out: list[str] = []
    for n in names:
        candidate, i = n, 1
        stem, dot, ext = n.rpartition(".")
        if not dot:
            stem, ext = n, ""
        while candidate in seen:
            i += 1
            candidate = f"{stem} ({i}).{ext}" if ext else f"{stem} ({i})"
        seen.add(candidate)
        out.append(candidate)
    return out


@dataclass
class NewFile:
    name: str
    data: bytes
    media_type: str | None = None


def guess_media_type(name: str) -> str:
    return mimetypes.guess_type(name)[0] or "application/octet-stream"


def files_note(files: list[TaskFile]) -> str:
    lines = [f"- {f.desktop_path} ({f.size} bytes, {f.media_type})" for f in files]
    return "Files uploaded with this task are saved on the desktop:\n" + "\n".join(lines)


# ------------------------------------------------------------------------------------------------ store

Listener = Callable[[str, dict[str, Any]], None]


class Store:
    """Tasks and their messages, files and summaries in one database (SQLite or PostgreSQL)."""

    def __init__(self, db: Database, desktop_files_dir: str = "/home/user/Desktop") -> None:
        self.db = db
        self.desktop_files_dir = desktop_files_dir.rstrip("/") or "/"
        self._listeners: list[Listener] = []
        self._last_ts: datetime | None = None

    @classmethod
    async def open(
        cls, url: str, *, desktop_files_dir: str = "/home/user/Desktop", migrate: bool = True
    ) -> Store:
        db = Database(url)
        if migrate:
            await db.migrate()
        return cls(db, desktop_files_dir)

    async def close(self) -> None:
        await self.db.dispose()

    # -- plumbing

    def subscribe(self, listener: Listener) -> Callable[[], None]:
        """Call ``listener(event, data)`` after every committed change; returns the unsubscribe function."""
        self._listeners.append(listener)
        return lambda: self._listeners.remove(listener) if listener in self._listeners else None

    def _emit(self, event: str, data: dict[str, Any]) -> None:
        for listener in list(self._listeners):
            listener(event, data)

    @asynccontextmanager
    async def _write(self) -> AsyncIterator[AsyncSession]:
        async with AsyncSession(self.db.writer, expire_on_commit=False) as s, s.begin():
            yield s

    @asynccontextmanager
    async def _read(self) -> AsyncIterator[AsyncSession]:
        async with AsyncSession(self.db.reader, expire_on_commit=False) as s, s.begin():
            yield s

    async def _notify(self, s: AsyncSession, task_id: str) -> None:
        if not self.db.sqlite:  # delivered by PostgreSQL at commit
            await s.execute(text("SELECT pg_notify(:c, :id)"), {"c": NOTIFY_CHANNEL, "id": task_id})

    def _now(self) -> datetime:
        """utcnow, strictly increasing within this process so messages keep their order."""
        now = utcnow()
        if self._last_ts is not None and now <= self._last_ts:
            now = self._last_ts + timedelta(microseconds=1)
        self._last_ts = now
        return now

    @staticmethod
    async def _locked(s: AsyncSession, task_id: str) -> Task:
        task = await s.get(Task, task_id, with_for_update=True)
        if task is None:
            raise TaskNotFound(task_id)
        return task

    # -- tasks

    async def create_task(
        self,
        description: str,
        *,
        priority: str = TaskPriority.MEDIUM,
        type: str | None = None,
        scheduled_for: datetime | None = None,
        model: str | None = None,
        created_by: str = Role.USER,
        files: list[NewFile] | None = None,
    ) -> Task:
        """A new PENDING task; its first USER message is the description (plus where its files are)."""
        if type is None:
            type = TaskType.SCHEDULED if scheduled_for else TaskType.IMMEDIATE
        if type == TaskType.SCHEDULED and scheduled_for is None:
            raise BadRequest("scheduledFor: required when type is SCHEDULED")
        if type == TaskType.IMMEDIATE and scheduled_for is not None:
            raise BadRequest("scheduledFor: only allowed when type is SCHEDULED")
        now = self._now()
        task = Task(
            id=new_id(),
            description=description,
            status=S.PENDING,
            priority=priority,
            priority_rank=PRIORITY_RANK[priority],
            type=type,
            scheduled_for=scheduled_for,
            model=model,
            control=Role.ASSISTANT,
            created_by=created_by,
            created_at=now,
            updated_at=now,
        )
        rows: list[TaskFile] = []
        files = files or []
        for f, name in zip(files, unique_names(safe_name(f.name) for f in files), strict=True):
            rows.append(
                TaskFile(
                    id=new_id(),
                    task_id=task.id,
                    name=name,
                    media_type=f.media_type or guess_media_type(name),
                    size=len(f.data),
                    data=f.data,
                    desktop_path=posixpath.join(self.desktop_files_dir, name),
                    created_at=now,
                )
            )
        content: list[dict[str, Any]] = [{"type": "text", "text": description}]
        if rows:
            content.append({"type": "text", "text": files_note(rows)})
        first = Message(
            id=new_id(), task_id=task.id, role=Role.USER, content=content, created_at=now, updated_at=now
        )
        async with self._write() as s:
            s.add_all([task, first, *rows])  # the unit of work inserts the task before its children
            await self._notify(s, task.id)
        self._emit("task_created", task_json(task))
        self._emit("new_message", message_json(first))
        return task

    async def get_task(self, task_id: str) -> Task:
        async with self._read() as s:
            task = await s.get(Task, task_id)
        if task is None:
            raise TaskNotFound(task_id)
        return task

    async def get_task_detail(self, task_id: str) -> tuple[Task, list[Message], list[TaskFile]]:
        """The task, all its messages (oldest first) and its files' metadata (no bytes)."""
        async with self._read() as s:
            task = await s.get(Task, task_id)
            if task is None:
                raise TaskNotFound(task_id)
            messages = list(
                (
                    await s.scalars(
                        select(Message)
                        .where(Message.task_id == task_id)
                        .order_by(Message.created_at, Message.id)
                    )
                ).all()
            )
            files = list(
                (
                    await s.scalars(
                        select(TaskFile)
                        .options(_no_data())
                        .where(TaskFile.task_id == task_id)
                        .order_by(TaskFile.created_at, TaskFile.name)
                    )
                ).all()
            )
        return task, messages, files

    async def list_tasks(
        self, statuses: Iterable[str] | None = None, limit: int = 100, offset: int = 0
    ) -> tuple[list[Any], int]:
        """Newest first; returns the page (read-only rows with Task's attribute names) and the total
        count matching the filter."""
        where = [Task.status.in_(list(statuses))] if statuses else []
        # Plain rows, not ORM objects (a third of the time): they have the same attribute names as Task.
        page_stmt = (
            select(*Task.__table__.columns).where(*where).order_by(Task.created_at.desc(), Task.id.desc())
        )
        async with self._read() as s:
            page = list((await s.execute(page_stmt.limit(limit).offset(offset))).all())
            if offset == 0 and len(page) < limit:
                return page, len(page)  # the whole list fits: no count needed
            total = await s.scalar(select(func.count()).select_from(Task).where(*where))
        return page, int(total or 0)

    async def in_progress(self, prefer_owner: str | None = None) -> Task | None:
        """The IN_PROGRESS task (this worker's first when several desktops share the database)."""
        stmt = select(Task).where(Task.status == S.IN_PROGRESS)
        if prefer_owner:
            mine = func.coalesce(Task.lease_owner == prefer_owner, False)  # NULL owner sorts as not mine
            stmt = stmt.order_by(mine.desc(), Task.executed_at)
        else:
            stmt = stmt.order_by(Task.executed_at)
        async with self._read() as s:
            return (await s.scalars(stmt.limit(1))).first()

    async def update_task(
        self,
        task_id: str,
        *,
        status: str | None = None,
        priority: str | None = None,
        description: str | None = None,
        control: str | None = None,
        error: str | None = None,
        result: Any = None,
        model: str | None = None,
        by_queue: bool = False,
    ) -> Task:
        """Change a task, enforcing DESIGN.md §3's status moves; emits task_updated.

        For the agent loop: ``update_task(id, status="NEEDS_HELP")``, ``status="COMPLETED", result=...``,
        ``status="FAILED", error="..."``. A description can only change while the task is PENDING.
        """
        async with self._write() as s:
            task = await self._locked(s, task_id)
            now = self._now()
            if description is not None and description != task.description:
                if task.status != S.PENDING:
                    raise BadRequest(
                        f"description: can only be changed while the task is PENDING, not {task.status}"
                    )
                task.description = description
            if priority is not None:
                task.priority, task.priority_rank = priority, PRIORITY_RANK[priority]
            if status is not None and status != task.status:
                check_transition(task.status, status, by_queue=by_queue)
                _apply_status(task, TaskStatus(status), now)
            if control is not None:
                task.control = control
            if error is not None:
                task.error = error
            if result is not None:
                task.result = result
            if model is not None:
                task.model = model
            task.updated_at = now
            await self._notify(s, task.id)
        self._emit("task_updated", task_json(task))
        return task

    async def delete_task(self, task_id: str) -> None:
        async with self._write() as s:
            task = await self._locked(s, task_id)
            await s.delete(task)
            await self._notify(s, task_id)
        self._emit("task_deleted", {"id": task_id})

    # -- messages

    async def add_message(
        self,
        task_id: str,
        content: list[dict[str, Any]],
        role: str = Role.USER,
        *,
        requeue: bool | None = None,
    ) -> Message:
        """Append a message. A USER message re-queues a NEEDS_HELP/NEEDS_REVIEW/COMPLETED/FAILED task
        (DESIGN.md §3) unless ``requeue=False``; the agent loop appends ASSISTANT messages with this too."""
        if requeue is None:
            requeue = role == Role.USER
        async with self._write() as s:
            task = await self._locked(s, task_id)
            now = self._now()
            msg = Message(
                id=new_id(), task_id=task_id, role=role, content=content, created_at=now, updated_at=now
            )
            s.add(msg)
            changed = requeue and task.status in REQUEUE_ON_MESSAGE
            if changed:
                _apply_status(task, S.PENDING, now)
                task.updated_at = now
                await self._notify(s, task_id)
        self._emit("new_message", message_json(msg))
        if changed:
            self._emit("task_updated", task_json(task))
        return msg

    async def list_messages(
        self, task_id: str, limit: int = 100, offset: int = 0
    ) -> tuple[list[Message], int]:
        """Oldest first; returns the page and the task's message count."""
        async with self._read() as s:
            if await s.scalar(select(Task.id).where(Task.id == task_id)) is None:
                raise TaskNotFound(task_id)
            total = await s.scalar(
                select(func.count()).select_from(Message).where(Message.task_id == task_id)
            )
            page = (
                await s.scalars(
                    select(Message)
                    .where(Message.task_id == task_id)
                    .order_by(Message.created_at, Message.id)
                    .limit(limit)
                    .offset(offset)
                )
            ).all()
        return list(page), int(total or 0)

    # -- summaries (written by the agent loop when it condenses a long history)

    async def add_summary(self, task_id: str, content: str, parent_id: str | None = None) -> Summary:
        async with self._write() as s:
            await self._locked(s, task_id)
            now = self._now()
            summary = Summary(
                id=new_id(),
                task_id=task_id,
                content=content,
                parent_id=parent_id,
                created_at=now,
                updated_at=now,
            )
            s.add(summary)
        return summary

    async def list_summaries(self, task_id: str) -> list[Summary]:
        async with self._read() as s:
            return list(
                (
                    await s.scalars(
                        select(Summary).where(Summary.task_id == task_id).order_by(Summary.created_at)
                    )
                ).all()
            )

    # -- files

    async def pending_files(self, task_id: str) -> list[TaskFile]:
        """Files of the task not yet written onto the desktop, with their bytes."""
        async with self._read() as s:
            return list(
                (
                    await s.scalars(
                        select(TaskFile)
                        .where(TaskFile.task_id == task_id, TaskFile.written_at.is_(None))
                        .order_by(TaskFile.created_at, TaskFile.name)
                    )
                ).all()
            )

    async def mark_file_written(self, file_id: str) -> None:
        async with self._write() as s:
            await s.execute(update(TaskFile).where(TaskFile.id == file_id).values(written_at=self._now()))

    # -- queue (used by app.agent.queue.Worker)

    async def claim_next(self, worker_id: str, lease_seconds: float) -> Task | None:
        """Atomically take the next task and lease it to ``worker_id``; None when nothing is due.

        Due are: IN_PROGRESS tasks nobody holds a live lease on (their worker died, or a human moved
        them back from NEEDS_HELP), then PENDING tasks whose schedule has come, highest priority first,
        oldest first. One UPDATE ... WHERE id = (SELECT ... LIMIT 1) RETURNING: atomic on SQLite (one
        writer), and with FOR UPDATE SKIP LOCKED concurrent workers on PostgreSQL never take the same row.
        """
        now = self._now()
        due = or_(
            and_(Task.status == S.PENDING, or_(Task.scheduled_for.is_(None), Task.scheduled_for <= now)),
            and_(
                Task.status == S.IN_PROGRESS,
                or_(Task.lease_expires_at.is_(None), Task.lease_expires_at <= now),
            ),
        )
        pick = (
            select(Task.id)
            .where(due)
            .order_by(
                (Task.status == S.IN_PROGRESS).desc(), Task.priority_rank.desc(), Task.created_at, Task.id
            )
            .limit(1)
        )
        if not self.db.sqlite:
            pick = pick.with_for_update(skip_locked=True)
        stmt = (
            update(Task)
            .where(Task.id == pick.scalar_subquery())
            .values(
                status=S.IN_PROGRESS,
                lease_owner=worker_id,
                lease_expires_at=now + timedelta(seconds=lease_seconds),
                executed_at=func.coalesce(Task.executed_at, now),
                updated_at=now,
            )
            .returning(Task)
            .execution_options(synchronize_session=False)
        )
        async with self._write() as s:
            task = (await s.scalars(stmt)).first()
        if task is not None:
            self._emit("task_updated", task_json(task))
        return task

    async def heartbeat(self, task_id: str, worker_id: str, lease_seconds: float) -> bool:
        """Extend the lease; False when the task is no longer IN_PROGRESS under this worker's lease."""
        exp = self._now() + timedelta(seconds=lease_seconds)
        async with self._write() as s:
            res = await s.execute(
                update(Task)
                .where(Task.id == task_id, Task.lease_owner == worker_id, Task.status == S.IN_PROGRESS)
                .values(lease_expires_at=exp)
                .execution_options(synchronize_session=False)
            )
        return res.rowcount == 1

    async def release(
        self, task_id: str, worker_id: str, *, unfinished_error: str | None = None
    ) -> Task | None:
        """The worker is done with the task: drop its lease. If the task is still IN_PROGRESS under this
        worker, it failed (``unfinished_error``) — an executor must leave it in another status."""
        async with self._write() as s:
            task = await s.get(Task, task_id, with_for_update=True)
            if task is None or task.lease_owner != worker_id:
                return task
            now = self._now()
            changed = False
            if task.status == S.IN_PROGRESS:
                _apply_status(task, S.FAILED, now)
                task.error = unfinished_error or "the agent stopped without finishing the task"
                changed = True
            task.lease_owner = task.lease_expires_at = None
            task.updated_at = now
            await self._notify(s, task_id)
        if changed:
            self._emit("task_updated", task_json(task))
        return task

    async def abandon(self, task_id: str, worker_id: str) -> None:
        """Hand an IN_PROGRESS task back unfinished (worker shutdown): the next worker resumes it."""
        async with self._write() as s:
            await s.execute(
                update(Task)
                .where(Task.id == task_id, Task.lease_owner == worker_id, Task.status == S.IN_PROGRESS)
                .values(lease_owner=None, lease_expires_at=None)
                .execution_options(synchronize_session=False)
            )
            await self._notify(s, task_id)

    async def next_due_at(self) -> datetime | None:
        """When the queue next changes by itself: a scheduled task comes due or a lease expires."""
        async with self._read() as s:
            sched = await s.scalar(
                select(func.min(Task.scheduled_for)).where(
                    Task.status == S.PENDING, Task.scheduled_for.is_not(None)
                )
            )
            lease = await s.scalar(
                select(func.min(Task.lease_expires_at)).where(
                    Task.status == S.IN_PROGRESS, Task.lease_expires_at.is_not(None)
                )
            )
        found = [t for t in (sched, lease) if t is not None]
        return min(found) if found else None

    async def task_state(self, task_id: str) -> tuple[str, str, str | None] | None:
        """(status, control, lease_owner) or None when the task is gone; cheap, for polling loops."""
        async with self._read() as s:
            row = (
                await s.execute(select(Task.status, Task.control, Task.lease_owner).where(Task.id == task_id))
            ).first()
        return None if row is None else (row[0], row[1], row[2])


def _apply_status(task: Task, status: TaskStatus, now: datetime) -> None:
    """Set a status and the fields that go with it."""
    task.status = status
    if status == S.IN_PROGRESS:
        task.executed_at = task.executed_at or now
        # Without a lease the queue hands it to the next free worker (NEEDS_HELP -> IN_PROGRESS by a human).
        task.lease_owner = task.lease_expires_at = None
    else:
        task.lease_owner = task.lease_expires_at = None
    if status in FINISHED:
        task.completed_at = now
    elif status == S.PENDING:
        task.completed_at = None
        task.error = None


def _no_data() -> Any:
    from sqlalchemy.orm import defer

    return defer(TaskFile.data)
