"""The queue's worker: claims the next task, saves its files onto the desktop, runs the executor on it.

One worker per desktop runs one task at a time, and announces its desktop to the fleet
(``deskpilot.tasks.desktops``: a heartbeat every third of the lease, with the desktop service's health).
It sleeps on an ``asyncio.Event`` that every local change sets (create, patch, message), so a new task
starts at once; a timer wakes it only for what nobody
announces: a scheduled task coming due, a lease running out, and on PostgreSQL other processes' changes
(LISTEN/NOTIFY, with ``poll_seconds`` as the fallback). What runs a task is an ``Executor``
(``deskpilot.tasks.executor``).

Run one task-service process per desktop (no ``uvicorn --workers``): each process has one worker.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import posixpath
import socket
import time
from http import HTTPStatus

import asyncpg
from opentelemetry import trace

from deskpilot import logs, tracing
from deskpilot.computer.client import AsyncDesktop, DesktopClientError
from deskpilot.taskapi.types import Role, TaskStatus
from deskpilot.tasks.db import keep_connected
from deskpilot.tasks.desktops import Identity, Registry, host_desktop_name
from deskpilot.tasks.events import Event
from deskpilot.tasks.executor import Executor, TaskContext
from deskpilot.tasks.leases import Leases
from deskpilot.tasks.metrics import TaskMetrics
from deskpilot.tasks.models import Task, TaskFile, utcnow
from deskpilot.tasks.store import NOTIFY_CHANNEL, Store
from deskpilot.tasks.uploads import numbered, renamed_note

log = logging.getLogger(__name__)
tracer = trace.get_tracer(__name__)

# How many names an upload tries on the desktop (report.pdf, report (2).pdf ...) before the task fails.
MAX_COPIES = 100


def default_worker_id() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


class Worker:
    def __init__(
        self,
        store: Store,
        executor: Executor,
        desktop: AsyncDesktop,
        *,
        worker_id: str | None = None,
        lease_seconds: float = 30.0,
        poll_seconds: float = 5.0,
        identity: Identity | None = None,
        metrics: TaskMetrics | None = None,
    ) -> None:
        self.store = store
        self.metrics = metrics  # queue waits, runs and model calls (deskpilot/tasks/metrics.py), if on
        self.leases = Leases(store)
        self.registry = Registry(store)
        self.identity = identity or Identity(host_desktop_name(), (), desktop.base_url)
        self.executor = executor
        self.desktop = desktop
        self.worker_id = worker_id or default_worker_id()
        self.lease_seconds = lease_seconds
        self.poll_seconds = poll_seconds
        self.current_task_id: str | None = None
        self._ctx: TaskContext | None = None
        self._run: asyncio.Task[None] | None = None
        self._wake = asyncio.Event()
        self._stopping = False
        self._loop_task: asyncio.Task[None] | None = None
        self._listen_task: asyncio.Task[None] | None = None
        self._announce_task: asyncio.Task[None] | None = None
        self._unsubscribe = store.subscribe(self._on_event)

    # -- life cycle

    async def start(self) -> None:
        await self._announce()  # in the fleet before the first claim
        self._announce_task = asyncio.create_task(self._heartbeats(), name="desktop heartbeat")
        self._loop_task = asyncio.create_task(self._main(), name=f"worker {self.worker_id}")
        if not self.store.db.sqlite:
            self._listen_task = asyncio.create_task(self._listen(), name="worker LISTEN")

    async def stop(self) -> None:
        """Stop claiming; a running task is interrupted and handed back to the queue at once."""
        self._stopping = True
        self._unsubscribe()
        self._wake.set()
        for job in (self._announce_task, self._listen_task, self._loop_task):
            if job is not None:
                job.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await job
        with contextlib.suppress(Exception):
            await self.registry.withdraw(self.identity.name, self.worker_id)

    def _on_event(self, event: Event) -> None:
        if event.kind != "task_deleted":
            self._wake.set()
        if self._ctx is not None and event.kind == "task_updated" and event.task_id == self.current_task_id:
            self._ctx.control_changed.set()

    async def cancel_task(self, task_id: str, wait_seconds: float = 10.0) -> bool:
        """Cancel the executor if it is running ``task_id`` here; waits for it to stop. True if it was."""
        run = self._run
        if run is None or self.current_task_id != task_id or run.done():
            return False
        run.cancel()
        with contextlib.suppress(asyncio.CancelledError, TimeoutError, Exception):
            await asyncio.wait_for(asyncio.shield(run), wait_seconds)
        return True

    # -- the loop

    async def _main(self) -> None:
        while not self._stopping:
            self._wake.clear()
            try:
                task = await self.leases.claim_next(self.worker_id, self.lease_seconds, self.identity)
            except Exception:
                log.exception("claiming a task failed; retrying", extra={"worker": self.worker_id})
                await asyncio.sleep(1)
                continue
            if task is not None:
                if self.metrics is not None:
                    self.metrics.claimed(task)
                await self._traced(task)
                continue
            await self._sleep()

    async def _sleep(self) -> None:
        timeout = self.poll_seconds
        with contextlib.suppress(Exception):
            due = await self.leases.next_due_at()
            if due is not None:
                timeout = min(timeout, max(0.0, (due - utcnow()).total_seconds()) + 0.005)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._wake.wait(), timeout)

    async def _traced(self, task: Task) -> None:
        """``_execute`` in the task's span (``task``: its id, model and outcome, the status it was left in),
        every log line of the run naming the task."""
        attributes = {"deskpilot.task.id": task.id} | ({"deskpilot.model": task.model} if task.model else {})
        with (
            tracer.start_as_current_span(
                "task", attributes=attributes, record_exception=False, set_status_on_exception=False
            ) as span,
            logs.about_task(task.id),
        ):
            try:
                await self._execute(task)
            except BaseException as exc:  # the worker is stopping: the task went back to the queue
                tracing.failed(span, exc, "interrupted")
                raise
            if span.is_recording():
                state = await self.store.task_state(task.id)
                outcome = str(state[0]) if state is not None else "deleted"
                span.set_attribute("deskpilot.outcome", outcome)
                if outcome == TaskStatus.FAILED:
                    span.set_status(trace.Status(trace.StatusCode.ERROR))

    async def _execute(self, task: Task) -> None:
        # the task's desktop calls (uploads and the agent's) are labelled with it in the desktop's journal
        sink = self.metrics.model_call if self.metrics is not None else None
        ctx = TaskContext(self.store, self.desktop.acting_for(task.id), task.id, self.poll_seconds, sink)
        self.current_task_id, self._ctx = task.id, ctx
        started = time.monotonic()
        self._run = asyncio.create_task(self._prepare_and_run(task, ctx), name=f"task {task.id}")
        heartbeat = asyncio.create_task(self._heartbeat(task.id, self._run))
        error: str | None = None
        try:
            await asyncio.wait({self._run})
            if self._run.cancelled():
                error = "the run was cancelled"
            elif (exc := self._run.exception()) is not None:
                log.error("the executor failed", extra={"task": task.id}, exc_info=exc)
                error = f"{type(exc).__name__}: {exc}"
            else:
                error = "the agent stopped without setting a final status"
        except asyncio.CancelledError:  # the worker is stopping: hand the task back to the queue
            self._run.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._run
            with contextlib.suppress(Exception):
                await asyncio.shield(self.leases.abandon(task.id, self.worker_id))
            self._ran(started, "interrupted")
            raise
        finally:
            heartbeat.cancel()
            self.current_task_id, self._ctx, self._run = None, None, None
        try:
            released = await self.leases.release(task.id, self.worker_id, unfinished_error=error)
        except Exception:
            log.exception("releasing the task failed", extra={"task": task.id})
            return
        self._ran(started, released.status.lower() if released is not None else "deleted")

    def _ran(self, started: float, outcome: str) -> None:
        if self.metrics is not None:
            self.metrics.ran(time.monotonic() - started, outcome)

    async def _prepare_and_run(self, task: Task, ctx: TaskContext) -> None:
        renamed: list[tuple[str, str]] = []
        for upload in await self.store.pending_files(task.id):
            try:
                path = await self._save(upload, ctx.desktop)
            except DesktopClientError as exc:
                await ctx.update(
                    status=TaskStatus.FAILED,
                    error=f"could not save {upload.name} on the desktop: {exc.message}",
                )
                return
            await self.store.mark_file_written(upload.id, path)
            if path != upload.desktop_path:
                renamed.append((upload.desktop_path, path))
        if renamed:  # the first message announced other paths: tell the model (and the UI) where they are
            await ctx.add_message([{"type": "text", "text": renamed_note(renamed)}], role=Role.USER)
        await self.executor.execute(task.id, ctx)

    async def _save(self, upload: TaskFile, desktop: AsyncDesktop) -> str:
        """Write an upload onto the desktop without replacing anything there: at the path announced, else
        as its next free numbered copy (report (2).pdf ...). Returns where it was written."""
        directory, name = posixpath.split(upload.desktop_path)
        for copy in range(1, MAX_COPIES + 1):
            path = posixpath.join(directory, numbered(name, copy))
            try:
                await desktop.write_file(path, upload.data, overwrite=False)
            except DesktopClientError as exc:
                if exc.status != HTTPStatus.CONFLICT:
                    raise
                continue
            return path
        raise DesktopClientError(f"{name} and {MAX_COPIES - 1} numbered copies of it are all taken", 409)

    async def _heartbeat(self, task_id: str, run: asyncio.Task[None]) -> None:
        """Renew the lease; cancel the run when the task was taken away (deleted, cancelled, or another
        worker holds it) by a change this process did not see."""
        interval = max(self.lease_seconds / 3, 0.05)
        while not run.done():
            await asyncio.sleep(interval)
            try:
                if await self.leases.heartbeat(task_id, self.worker_id, self.lease_seconds):
                    continue
                state = await self.store.task_state(task_id)
            except Exception:
                log.exception("renewing the lease failed", extra={"task": task_id})
                continue
            if state is None or state[0] == TaskStatus.CANCELLED:
                reason = "deleted" if state is None else "cancelled"
            elif state[0] == TaskStatus.IN_PROGRESS and state[2] != self.worker_id:
                reason = f"claimed by {state[2]}"
            else:
                continue
            log.warning(
                "the task's run stops", extra={"task": task_id, "worker": self.worker_id, "reason": reason}
            )
            run.cancel()
            return

    async def _heartbeats(self) -> None:
        while True:
            await asyncio.sleep(self._heartbeat_interval)
            await self._announce()

    @property
    def _heartbeat_interval(self) -> float:
        return max(self.lease_seconds / 3, 0.05)

    async def _announce(self) -> None:
        """This desktop is in the fleet for another lease, healthy unless its desktop service says not."""
        try:
            health = await asyncio.wait_for(self.desktop.health(), self._heartbeat_interval)
            problem = None if health.get("status") == "ok" else str(health.get("error") or health)
        except (DesktopClientError, TimeoutError) as exc:
            problem = str(exc) or "the desktop service did not answer in time"
        try:
            await self.registry.announce(self.identity, self.worker_id, self.lease_seconds, problem)
        except Exception as exc:
            log.warning(
                "announcing the desktop failed", extra={"desktop": self.identity.name, "error": repr(exc)}
            )

    async def _listen(self) -> None:
        """PostgreSQL LISTEN: other processes' task changes wake this worker too."""

        async def listen(conn: asyncpg.Connection) -> None:
            await conn.add_listener(NOTIFY_CHANNEL, lambda *_: self._wake.set())
            self._wake.set()  # catch up on anything missed while not listening
            while not self._stopping:
                await asyncio.sleep(30)
                await conn.execute("SELECT 1")

        async def failed(exc: Exception) -> None:
            log.warning(
                "LISTEN failed; polling instead",
                extra={"channel": NOTIFY_CHANNEL, "error": repr(exc), "poll_s": self.poll_seconds},
            )
            await asyncio.sleep(self.poll_seconds)

        await keep_connected(self.store.db.listen_dsn, listen, failed)
