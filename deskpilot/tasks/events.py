"""WebSocket ``/ws``: live task events for user interfaces.

Every frame is JSON ``{"event": "task_created"|"task_updated"|"task_deleted"|"new_message", "data": ...}``;
``data`` is the Task (without messages) for task_created/task_updated, ``{"id"}`` for task_deleted and
the Message for new_message. A connection gets every event, or only those of the tasks it subscribed to:
``/ws?taskId=<id>`` (repeatable) at connect time, or at any time the client sends
``{"action": "subscribe", "taskId": "<id>"}`` / ``{"action": "unsubscribe", "taskId": "<id>"}``; an empty
subscription set means all events again. The server answers each action with
``{"event": "subscribed", "data": {"taskIds": [...]}}``. ``/ws?events=task_created,task_updated`` limits a
connection to those kinds (a task list has no use for messages and their screenshots); an unknown kind
closes the socket with 1008 and the list of kinds. Other processes' events arrive through ``fanout.py``
(PostgreSQL).

The store announces each committed change as an ``Event`` (a domain object); ``Event.frame`` turns it into
the wire format above, in this one place.
"""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass
from typing import Any, Literal

from fastapi import WebSocket, WebSocketDisconnect

from deskpilot.taskapi.types import EVENT_KINDS
from deskpilot.tasks.models import Message, Task
from deskpilot.tasks.schemas import message_json, task_json
from deskpilot.web import dumps

QUEUE_LIMIT = 1000  # a client this far behind is disconnected rather than buffered without bound
EventKind = Literal["task_created", "task_updated", "task_deleted", "new_message"]


@dataclass(frozen=True, slots=True)
class Event:
    """A committed change: ``task`` for task_created/task_updated, ``message`` for new_message."""

    kind: EventKind
    task_id: str
    task: Task | None = None
    message: Message | None = None

    @classmethod
    def task_created(cls, task: Task) -> Event:
        return cls("task_created", task.id, task=task)

    @classmethod
    def task_updated(cls, task: Task) -> Event:
        return cls("task_updated", task.id, task=task)

    @classmethod
    def task_deleted(cls, task_id: str) -> Event:
        return cls("task_deleted", task_id)

    @classmethod
    def new_message(cls, message: Message) -> Event:
        return cls("new_message", message.task_id, message=message)

    def data(self) -> dict[str, Any]:
        if self.task is not None:
            return task_json(self.task)
        if self.message is not None:
            return message_json(self.message)
        return {"id": self.task_id}

    def frame(self) -> bytes:
        return dumps({"event": self.kind, "data": self.data()})


class _Client:
    def __init__(self, task_ids: set[str], events: set[str]) -> None:
        self.task_ids = task_ids
        self.events = events  # empty: all kinds
        self.queue: asyncio.Queue[bytes | None] = asyncio.Queue(QUEUE_LIMIT)

    def wants(self, event: Event) -> bool:
        if self.events and event.kind not in self.events:
            return False
        return not self.task_ids or event.task_id in self.task_ids


class EventHub:
    """Fans store events out to WebSocket clients. ``publish`` is a Store listener (sync, same loop)."""

    def __init__(self) -> None:
        self._clients: set[_Client] = set()

    @property
    def clients(self) -> int:
        """How many WebSocket clients are connected now."""
        return len(self._clients)

    def publish(self, event: Event) -> None:
        frame = None
        for client in list(self._clients):
            if not client.wants(event):
                continue
            frame = frame or event.frame()
            try:
                client.queue.put_nowait(frame)
            except asyncio.QueueFull:
                self._clients.discard(client)
                with contextlib.suppress(asyncio.QueueFull):
                    client.queue.get_nowait()
                    client.queue.put_nowait(None)  # tells its sender to close

    async def serve(self, ws: WebSocket) -> None:
        await ws.accept()
        events = {e for v in ws.query_params.getlist("events") for e in v.split(",") if e}
        if unknown := events.difference(EVENT_KINDS):
            reason = f"unknown events {', '.join(sorted(unknown))}; events are {', '.join(EVENT_KINDS)}"
            await ws.close(code=1008, reason=reason)
            return
        client = _Client(set(ws.query_params.getlist("taskId")), events)
        self._clients.add(client)
        sender = asyncio.create_task(self._send(ws, client))
        try:
            while True:
                msg = await ws.receive_json()
                self._handle(client, msg)
                ack = {"event": "subscribed", "data": {"taskIds": sorted(client.task_ids)}}
                with contextlib.suppress(asyncio.QueueFull):  # via the queue: one sender per socket
                    client.queue.put_nowait(dumps(ack))
        except (WebSocketDisconnect, RuntimeError):
            pass
        except (ValueError, KeyError):  # not JSON, or a binary frame
            with contextlib.suppress(Exception):
                await ws.close(code=1003, reason="frames must be JSON")
        finally:
            self._clients.discard(client)
            sender.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await sender

    @staticmethod
    def _handle(client: _Client, msg: Any) -> None:
        if not isinstance(msg, dict):
            return
        task_id = msg.get("taskId")
        if msg.get("action") == "subscribe" and isinstance(task_id, str):
            client.task_ids.add(task_id)
        elif msg.get("action") == "unsubscribe":
            if isinstance(task_id, str):
                client.task_ids.discard(task_id)
            else:
                client.task_ids.clear()

    @staticmethod
    async def _send(ws: WebSocket, client: _Client) -> None:
        while True:
            frame = await client.queue.get()
            if frame is None:
                await ws.close(code=1013, reason="client too slow")
                return
            await ws.send_text(frame.decode())
