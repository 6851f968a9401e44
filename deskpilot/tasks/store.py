"""Data access for tasks, messages, files and summaries: one AsyncSession per unit of work.

Every change is committed first and then announced to the in-process listeners (the WebSocket hub,
the worker's wake-up) as an ``Event``. On PostgreSQL, changes that may concern the queue also
``NOTIFY deskpilot_tasks`` so workers in other processes wake up. The queue's own statements (claims and
leases) are in ``deskpilot.tasks.leases``.
"""

from __future__ import annotations

import posixpath
from collections.abc import AsyncIterator, Callable, Iterable
from contextlib import asynccontextmanager
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import func, select, text, update
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import defer

from deskpilot.computer.fields import DESKTOP_DIR
from deskpilot.errors import BadRequest, TaskNotFound
from deskpilot.taskapi.types import Role, TaskPriority, TaskStatus, TaskType
from deskpilot.tasks.db import Database
from deskpilot.tasks.events import Event
from deskpilot.tasks.lifecycle import (
    REQUEUE_ON_MESSAGE,
    apply_status,
    check_transition,
    log_created,
    log_deleted,
    log_status,
)
from deskpilot.tasks.models import Message, Summary, Task, TaskFile, new_id, utcnow
from deskpilot.tasks.uploads import NewFile, files_note, guess_media_type, safe_name, unique_names

NOTIFY_CHANNEL = "deskpilot_tasks"

Listener = Callable[[Event], None]


class Store:
    """Tasks and their messages, files and summaries in one database (SQLite or PostgreSQL)."""

    def __init__(self, db: Database, desktop_files_dir: str = DESKTOP_DIR) -> None:
        self.db = db
        self.desktop_files_dir = desktop_files_dir.rstrip("/") or "/"
        self._listeners: list[Listener] = []
        self._last_ts: datetime | None = None

    @classmethod
    async def open(cls, url: str, *, desktop_files_dir: str = DESKTOP_DIR, migrate: bool = True) -> Store:
        db = Database(url)
        if migrate:
            await db.migrate()
        return cls(db, desktop_files_dir)

    async def close(self) -> None:
        await self.db.dispose()

    # -- plumbing

    def subscribe(self, listener: Listener) -> Callable[[], None]:
        """Call ``listener(event)`` after every committed change; returns the unsubscribe function."""
        self._listeners.append(listener)
        return lambda: self._listeners.remove(listener) if listener in self._listeners else None

    def emit(self, event: Event) -> None:
        for listener in list(self._listeners):
            listener(event)

    @asynccontextmanager
    async def writing(self) -> AsyncIterator[AsyncSession]:
        session = AsyncSession(self.db.writer, expire_on_commit=False)
        async with self.db.space.watching(), session, session.begin():  # no space: StorageFull, 507
            yield session

    @asynccontextmanager
    async def reading(self) -> AsyncIterator[AsyncSession]:
        async with AsyncSession(self.db.reader, expire_on_commit=False) as session, session.begin():
            yield session

    async def notify(self, session: AsyncSession, task_id: str) -> None:
        if not self.db.sqlite:  # delivered by PostgreSQL at commit
            await session.execute(text("SELECT pg_notify(:c, :id)"), {"c": NOTIFY_CHANNEL, "id": task_id})

    def now(self) -> datetime:
        """utcnow, strictly increasing within this process so messages keep their order."""
        now = utcnow()
        if self._last_ts is not None and now <= self._last_ts:
            now = self._last_ts + timedelta(microseconds=1)
        self._last_ts = now
        return now

    @staticmethod
    async def _locked(session: AsyncSession, task_id: str) -> Task:
        task = await session.get(Task, task_id, with_for_update=True)
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
        desktop: str | None = None,
        desktop_label: str | None = None,
    ) -> Task:
        """A new PENDING task; its first USER message is the description (plus where its files are).
        ``desktop`` or ``desktop_label``: only that desktop, or one with that label, may run it."""
        if type is None:
            type = TaskType.SCHEDULED if scheduled_for else TaskType.IMMEDIATE
        if type == TaskType.SCHEDULED and scheduled_for is None:
            raise BadRequest("scheduledFor: required when type is SCHEDULED")
        if type == TaskType.IMMEDIATE and scheduled_for is not None:
            raise BadRequest("scheduledFor: only allowed when type is SCHEDULED")
        now = self.now()
        task = Task(
            id=new_id(),
            description=description,
            status=TaskStatus.PENDING,
            priority=priority,
            priority_rank=TaskPriority(priority).rank,
            type=type,
            scheduled_for=scheduled_for,
            model=model,
            control=Role.ASSISTANT,
            created_by=created_by,
            created_at=now,
            updated_at=now,
            desktop=desktop,
            desktop_label=desktop_label,
        )
        rows: list[TaskFile] = []
        files = files or []
        for upload, name in zip(files, unique_names(safe_name(upload.name) for upload in files), strict=True):
            rows.append(
                TaskFile(
                    id=new_id(),
                    task_id=task.id,
                    name=name,
                    media_type=upload.media_type or guess_media_type(name),
                    size=len(upload.data),
                    data=upload.data,
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
        async with self.writing() as session:
            session.add_all([task, first, *rows])  # the unit of work inserts the task before its children
            await self.notify(session, task.id)
        log_created(task, len(rows))
        self.emit(Event.task_created(task))
        self.emit(Event.new_message(first))
        return task

    async def get_task(self, task_id: str) -> Task:
        async with self.reading() as session:
            task = await session.get(Task, task_id)
        if task is None:
            raise TaskNotFound(task_id)
        return task

    async def get_task_detail(self, task_id: str) -> tuple[Task, list[Message], list[TaskFile]]:
        """The task, all its messages (oldest first) and its files' metadata (no bytes)."""
        async with self.reading() as session:
            task = await session.get(Task, task_id)
            if task is None:
                raise TaskNotFound(task_id)
            messages = list(
                (
                    await session.scalars(
                        select(Message)
                        .where(Message.task_id == task_id)
                        .order_by(Message.created_at, Message.id)
                    )
                ).all()
            )
            files = list(
                (
                    await session.scalars(
                        select(TaskFile)
                        .options(defer(TaskFile.data))
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
        async with self.reading() as session:
            page = list((await session.execute(page_stmt.limit(limit).offset(offset))).all())
            if offset == 0 and len(page) < limit:
                return page, len(page)  # the whole list fits: no count needed
            total = await session.scalar(select(func.count()).select_from(Task).where(*where))
        return page, int(total or 0)

    async def in_progress(self, prefer_owner: str | None = None) -> Task | None:
        """The IN_PROGRESS task (this worker's first when several desktops share the database)."""
        stmt = select(Task).where(Task.status == TaskStatus.IN_PROGRESS)
        if prefer_owner:
            mine = func.coalesce(Task.lease_owner == prefer_owner, False)  # NULL owner sorts as not mine
            stmt = stmt.order_by(mine.desc(), Task.executed_at)
        else:
            stmt = stmt.order_by(Task.executed_at)
        async with self.reading() as session:
            return (await session.scalars(stmt.limit(1))).first()

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
        """Change a task, enforcing the status machine (deskpilot.tasks.lifecycle); emits task_updated.

        For the agent loop: ``update_task(id, status="NEEDS_HELP")``, ``status="COMPLETED", result=...``,
        ``status="FAILED", error="..."``. A description can only change while the task is PENDING.
        """
        async with self.writing() as session:
            task = await self._locked(session, task_id)
            now = self.now()
            previous, owner = task.status, task.lease_owner
            if description is not None and description != task.description:
                if task.status != TaskStatus.PENDING:
                    raise BadRequest(
                        f"description: can only be changed while the task is PENDING, not {task.status}"
                    )
                task.description = description
            if priority is not None:
                task.priority, task.priority_rank = priority, TaskPriority(priority).rank
            if status is not None and status != task.status:
                check_transition(task.status, status, by_queue=by_queue)
                apply_status(task, TaskStatus(status), now)
            if control is not None:
                task.control = control
            if error is not None:
                task.error = error
            if result is not None:
                task.result = result
            if model is not None:
                task.model = model
            task.updated_at = now
            await self.notify(session, task.id)
        if task.status != previous:
            log_status(task, previous, owner, now)
        self.emit(Event.task_updated(task))
        return task

    async def delete_task(self, task_id: str) -> None:
        async with self.writing() as session:
            task = await self._locked(session, task_id)
            await session.delete(task)
            await self.notify(session, task_id)
        log_deleted(task)
        self.emit(Event.task_deleted(task_id))

    # -- messages

    async def add_message(
        self,
        task_id: str,
        content: list[dict[str, Any]],
        role: str = Role.USER,
        *,
        requeue: bool | None = None,
        tokens: tuple[int, int] = (0, 0),
    ) -> Message:
        """Append a message. A USER message re-queues a NEEDS_HELP/NEEDS_REVIEW/COMPLETED/FAILED task
        (deskpilot.tasks.lifecycle) unless ``requeue=False``; the agent loop appends with this too, with the
        (prompt, completion) ``tokens`` the reply cost, added to the task's in the same transaction."""
        if requeue is None:
            requeue = role == Role.USER
        async with self.writing() as session:
            task = await self._locked(session, task_id)
            now = self.now()
            msg = Message(
                id=new_id(), task_id=task_id, role=role, content=content, created_at=now, updated_at=now
            )
            session.add(msg)
            task.prompt_tokens += tokens[0]
            task.completion_tokens += tokens[1]
            previous = task.status
            changed = requeue and previous in REQUEUE_ON_MESSAGE
            if changed:
                apply_status(task, TaskStatus.PENDING, now)
                task.updated_at = now
                await self.notify(session, task_id)
        self.emit(Event.new_message(msg))
        if changed:
            log_status(task, previous, None, now)
            self.emit(Event.task_updated(task))
        return msg

    async def list_messages(
        self, task_id: str, limit: int = 100, offset: int = 0
    ) -> tuple[list[Message], int]:
        """Oldest first; returns the page and the task's message count."""
        async with self.reading() as session:
            if await session.scalar(select(Task.id).where(Task.id == task_id)) is None:
                raise TaskNotFound(task_id)
            total = await session.scalar(
                select(func.count()).select_from(Message).where(Message.task_id == task_id)
            )
            page = (
                await session.scalars(
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
        async with self.writing() as session:
            await self._locked(session, task_id)
            now = self.now()
            summary = Summary(
                id=new_id(),
                task_id=task_id,
                content=content,
                parent_id=parent_id,
                created_at=now,
                updated_at=now,
            )
            session.add(summary)
        return summary

    async def list_summaries(self, task_id: str) -> list[Summary]:
        query = select(Summary).where(Summary.task_id == task_id).order_by(Summary.created_at)
        async with self.reading() as session:
            return list((await session.scalars(query)).all())

    # -- files

    async def pending_files(self, task_id: str) -> list[TaskFile]:
        """Files of the task not yet written onto the desktop, with their bytes."""
        query = (
            select(TaskFile)
            .where(TaskFile.task_id == task_id, TaskFile.written_at.is_(None))
            .order_by(TaskFile.created_at, TaskFile.name)
        )
        async with self.reading() as session:
            return list((await session.scalars(query)).all())

    async def mark_file_written(self, file_id: str, desktop_path: str) -> None:
        """The file is on the desktop at ``desktop_path`` (another name than announced when one was taken)."""
        async with self.writing() as session:
            await session.execute(
                update(TaskFile)
                .where(TaskFile.id == file_id)
                .values(written_at=self.now(), desktop_path=desktop_path)
            )

    async def task_state(self, task_id: str) -> tuple[str, str, str | None] | None:
        """(status, control, lease_owner) or None when the task is gone; cheap, for polling loops."""
        async with self.reading() as session:
            row = (
                await session.execute(
                    select(Task.status, Task.control, Task.lease_owner).where(Task.id == task_id)
                )
            ).first()
        return None if row is None else (row[0], row[1], row[2])
