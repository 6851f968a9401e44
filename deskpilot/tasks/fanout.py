"""Task events across processes: every task service on one PostgreSQL sees every task's events on its
``/ws``, whichever process changed the task (several API replicas behind one address, a fleet of workers).

Each committed change this process makes is announced with ``NOTIFY deskpilot_events`` (its kind and ids,
well under PostgreSQL's 8000-byte payload limit) on a connection of its own, in commit order; every other
process LISTENs, reads the task or message back from the database and publishes it to its own hub, one event
at a time so their order holds. A process skips its own announcements (its hub had them at once). SQLite is
one process's database: there is nothing to fan out.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

import asyncpg
import orjson

from deskpilot.errors import TaskNotFound
from deskpilot.tasks.db import keep_connected
from deskpilot.tasks.events import Event, EventHub
from deskpilot.tasks.models import Message
from deskpilot.tasks.store import Store

log = logging.getLogger(__name__)

CHANNEL = "deskpilot_events"
BACKLOG = 10_000  # events waiting to be announced or delivered; beyond, they are dropped (logged)
RETRY_SECONDS = 2.0


class Fanout:
    def __init__(self, store: Store, hub: EventHub) -> None:
        self.store, self.hub = store, hub
        self.origin = uuid.uuid4().hex
        self._outbox: asyncio.Queue[str] = asyncio.Queue(BACKLOG)
        self._inbox: asyncio.Queue[dict[str, Any]] = asyncio.Queue(BACKLOG)
        self._tasks: list[asyncio.Task[None]] = []
        self._unsubscribe: Callable[[], None] = lambda: None
        self.listening = asyncio.Event()  # set once LISTEN is in place (tests wait for it)

    async def start(self) -> None:
        dsn = self.store.db.listen_dsn
        self._tasks = [
            asyncio.create_task(self._announce(dsn), name="fanout NOTIFY"),
            asyncio.create_task(self._listen(dsn), name="fanout LISTEN"),
            asyncio.create_task(self._deliver(), name="fanout deliver"),
        ]
        self._unsubscribe = self.store.subscribe(self.forward)

    async def stop(self) -> None:
        self._unsubscribe()
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task

    def forward(self, event: Event) -> None:
        """A Store listener: queue this process's event for the others."""
        note = {"o": self.origin, "k": event.kind, "t": event.task_id}
        if event.message is not None:
            note["m"] = event.message.id
        try:
            self._outbox.put_nowait(orjson.dumps(note).decode())
        except asyncio.QueueFull:
            log.warning(
                "task event not announced to other processes: backlog full", extra={"task": event.task_id}
            )

    async def _announce(self, dsn: str) -> None:
        async def send(conn: asyncpg.Connection) -> None:
            while True:
                await conn.execute("SELECT pg_notify($1, $2)", CHANNEL, await self._outbox.get())

        await keep_connected(dsn, send, self._failed("NOTIFY"))

    async def _listen(self, dsn: str) -> None:
        async def listen(conn: asyncpg.Connection) -> None:
            await conn.add_listener(CHANNEL, self._received)
            self.listening.set()
            while True:
                await asyncio.sleep(30)
                await conn.execute("SELECT 1")  # a dead connection shows here, and is replaced

        await keep_connected(dsn, listen, self._failed("LISTEN"))

    def _failed(self, what: str) -> Callable[[Exception], Awaitable[None]]:
        async def retry(exc: Exception) -> None:
            if what == "LISTEN":
                self.listening.clear()
            log.warning(f"{what} for task events failed; retrying", extra={"error": repr(exc)})
            await asyncio.sleep(RETRY_SECONDS)

        return retry

    def _received(self, conn: object, pid: int, channel: str, payload: str) -> None:
        try:
            note = orjson.loads(payload)
        except orjson.JSONDecodeError:
            return
        if not isinstance(note, dict) or note.get("o") == self.origin:
            return
        with contextlib.suppress(asyncio.QueueFull):
            self._inbox.put_nowait(note)

    async def _deliver(self) -> None:
        while True:
            note = await self._inbox.get()
            try:
                event = await self._event(note)
            except Exception as exc:  # a database hiccup loses this one event, not the stream
                log.warning("a task event from another process was lost", extra={"error": repr(exc)})
                continue
            if event is not None:
                self.hub.publish(event)

    async def _event(self, note: dict[str, Any]) -> Event | None:
        kind, task_id = note.get("k"), str(note.get("t"))
        if kind == "task_deleted":
            return Event.task_deleted(task_id)
        if kind == "new_message":
            async with self.store.reading() as session:
                message = await session.get(Message, str(note.get("m")))
            return Event.new_message(message) if message is not None else None
        if kind in ("task_created", "task_updated"):
            try:
                task = await self.store.get_task(task_id)
            except TaskNotFound:  # deleted since: its task_deleted follows
                return None
            return Event.task_created(task) if kind == "task_created" else Event.task_updated(task)
        return None
