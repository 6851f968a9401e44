"""What runs a task: the ``Executor`` plug-in interface and the ``TaskContext`` it is given.

The task service never imports the agent loop: the worker loads its executor from a string,
``TASKS_EXECUTOR=package.module:attribute`` (default ``deskpilot.agent.executor:AgentExecutor``), or takes one
passed to ``create_app(executor=...)``.

The contract: ``execute(task_id, ctx)`` is called with the task IN_PROGRESS and its files already on the
desktop. It must leave the task in another status (NEEDS_HELP, NEEDS_REVIEW, COMPLETED, FAILED) through
``ctx.update(...)`` and return. Raising marks the task FAILED with the error; returning with the task
still IN_PROGRESS marks it FAILED too. A user's reply re-queues the task, and the executor is called again
with the whole history in the store. It is cancelled (``asyncio.CancelledError``) when the task is
cancelled, deleted or moved by a user while running. An executor may also define
``async def models(self) -> list[dict]``: GET /tasks/models answers with it
(``[{"provider", "name", "title", "contextWindow"}]``), and ``async def warm_up(self)``, which the service
starts (without awaiting it) when it starts.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
from collections.abc import Callable
from datetime import datetime
from typing import Any, Protocol, runtime_checkable

from deskpilot.computer.client import AsyncDesktop
from deskpilot.taskapi.types import Role, TaskPriority, TaskStatus
from deskpilot.tasks.models import Message, Summary, Task
from deskpilot.tasks.store import Store

UNAVAILABLE = "agent loop not available in this build"
# (model, outcome, seconds, (prompt tokens, completion tokens)) of one model call: the service's metrics
ModelCallSink = Callable[[str, str, float, tuple[int, int]], None]


class TaskContext:
    """What an executor gets besides the task id: its task's history, the desktop, and control."""

    def __init__(
        self,
        store: Store,
        desktop: AsyncDesktop,
        task_id: str,
        poll_seconds: float,
        model_calls: ModelCallSink | None = None,
    ) -> None:
        self.store = store
        self.desktop = desktop
        self.task_id = task_id
        self._poll_seconds = poll_seconds
        self._model_calls = model_calls
        self.control_changed = asyncio.Event()  # set by the worker whenever this task changes

    def model_call(self, model: str, outcome: str, seconds: float, tokens: tuple[int, int] = (0, 0)) -> None:
        """Report one call to a model (each attempt) to the service's metrics: ``outcome`` is ``ok``,
        ``transient`` (a rate limit, 5xx, connection error or time-out) or ``rejected``; ``tokens`` the
        (prompt, completion) tokens it used. Nothing happens with metrics off."""
        if self._model_calls is not None:
            self._model_calls(model, outcome, seconds, tokens)

    async def task(self) -> Task:
        return await self.store.get_task(self.task_id)

    async def messages(self, offset: int = 0) -> list[Message]:
        """The task's messages from ``offset`` on, oldest first (messages are only ever appended)."""
        page, _ = await self.store.list_messages(self.task_id, limit=1_000_000, offset=offset)
        return page

    async def add_message(
        self, content: list[dict[str, Any]], role: str = Role.ASSISTANT, tokens: tuple[int, int] = (0, 0)
    ) -> Message:
        """Append to the conversation (announced as new_message); never re-queues the task. ``tokens``:
        the (prompt, completion) tokens the model used for it, added to the task's count."""
        return await self.store.add_message(self.task_id, content, role, requeue=False, tokens=tokens)

    async def summaries(self) -> list[Summary]:
        return await self.store.list_summaries(self.task_id)

    async def add_summary(self, content: str, parent_id: str | None = None) -> Summary:
        return await self.store.add_summary(self.task_id, content, parent_id)

    async def update(self, **fields: Any) -> Task:
        """``Store.update_task`` for this task: status=..., error=..., result=..., model=..."""
        return await self.store.update_task(self.task_id, **fields)

    async def create_task(
        self, description: str, priority: TaskPriority, scheduled_for: datetime | None
    ) -> Task:
        """A new task created by the agent (``createdBy: ASSISTANT``)."""
        return await self.store.create_task(
            description, priority=priority, scheduled_for=scheduled_for, created_by=Role.ASSISTANT
        )

    async def has_control(self) -> bool:
        state = await self.store.task_state(self.task_id)
        return state is not None and state[1] == Role.ASSISTANT

    async def wait_for_control(self) -> None:
        """Return once the agent holds control (at once unless a human took over with /takeover).
        Call it before every desktop action: the agent takes no action while the human holds control."""
        while True:
            self.control_changed.clear()
            if await self.has_control():
                return
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.control_changed.wait(), self._poll_seconds)


@runtime_checkable
class Executor(Protocol):
    """Runs one task; see the module docstring for the contract."""

    async def execute(self, task_id: str, ctx: TaskContext) -> None: ...


class UnavailableExecutor:
    """The executor of a build without the agent loop: fails every task honestly instead of pretending."""

    async def execute(self, task_id: str, ctx: TaskContext) -> None:
        await ctx.update(status=TaskStatus.FAILED, error=UNAVAILABLE)


def load_executor(spec: str) -> Executor:
    """``package.module:attribute`` naming an Executor, or a class / zero-argument factory making one."""
    if not spec:
        return UnavailableExecutor()
    module, _, attr = spec.partition(":")
    obj: Any = getattr(importlib.import_module(module), attr or "executor")
    if isinstance(obj, type) or (not isinstance(obj, Executor) and callable(obj)):  # a class: make one
        obj = obj()
    if not isinstance(obj, Executor):
        raise TypeError(
            f"TASKS_EXECUTOR={spec!r} is not an Executor (needs `async def execute(task_id, ctx)`)"
        )
    return obj
