"""Following one task on the task service's event stream (``/ws``) until it reaches a status, for
``Agent.wait`` and ``AsyncAgent.wait``: the state they share, so their loops differ only in their I/O.

The stream is subscribed to the task (``?taskId=``) and to task changes only (a ``new_message`` frame can
carry a screenshot). Each connection, the first and every one after a drop, begins with a GET of the task:
a change made while no connection was open is seen at once, never waited for.
"""

from __future__ import annotations

import time
from collections.abc import Collection
from urllib.parse import urlencode

import orjson
from websockets.exceptions import InvalidStatus

from deskpilot.client.calls import TaskClientError
from deskpilot.taskapi.types import TaskOut, TaskStatus

RECONNECT_DELAYS = (0.05, 0.1, 0.2, 0.5, 1.0, 2.0)  # then every 2 s
OPEN_TIMEOUT = 10.0


class Follow:
    def __init__(
        self, base_url: str, task_id: str, until: Collection[TaskStatus | str], timeout: float | None
    ) -> None:
        query = urlencode({"taskId": task_id, "events": "task_updated,task_deleted"})
        self.url = f"{base_url.replace('http', 'ws', 1)}/ws?{query}"
        self.task_id = task_id
        self.until = {TaskStatus(s) for s in until}
        self.timeout = timeout
        self.deadline = None if timeout is None else time.monotonic() + timeout
        self.status: str = "unknown"
        self.drops = 0

    def reached(self, task: TaskOut) -> bool:
        self.status = task.status
        return task.status in self.until

    def frame(self, raw: str | bytes) -> TaskOut | None:
        """The task as a frame about it shows it, or None (another frame)."""
        event = orjson.loads(raw)
        data = event.get("data") or {}
        if data.get("id") != self.task_id:
            return None
        if event.get("event") == "task_deleted":
            raise TaskClientError(f"task {self.task_id} was deleted while waiting for it", 404)
        return TaskOut.model_validate(data) if event.get("event") == "task_updated" else None

    def remaining(self, cap: float | None = None) -> float | None:
        """Seconds left (at most ``cap``); TimeoutError once none are."""
        if self.deadline is None:
            return cap
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError(f"task {self.task_id} is still {self.status} after {self.timeout:g} s")
        return left if cap is None else min(left, cap)

    def dropped(self, exc: Exception) -> float:
        """The pause before the next connection, after a connection failed or dropped (a time-out or a
        service restarting); an answer that will not change (401, a deleted task ...) is raised instead."""
        if isinstance(exc, TaskClientError) and exc.status:
            raise exc
        if isinstance(exc, InvalidStatus):
            status = exc.response.status_code
            detail = exc.response.body.decode(errors="replace")[:200] if exc.response.body else ""
            raise TaskClientError(f"GET /ws failed ({status}): {detail}", status, detail) from exc
        delay = RECONNECT_DELAYS[min(self.drops, len(RECONNECT_DELAYS) - 1)]
        self.drops += 1
        return min(delay, self.remaining() or delay)
