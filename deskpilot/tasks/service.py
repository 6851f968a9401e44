"""The task service's operations that involve more than the store: the worker must stop a task a human
moved, cancel before a delete, and so on. Routes call these; so can tests and other front ends."""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import Any

from deskpilot.computer.client import AsyncDesktop
from deskpilot.config import TaskSettings
from deskpilot.errors import BadRequest, InvalidTransition
from deskpilot.taskapi.types import FINISHED, Role, TaskStatus
from deskpilot.tasks.desktops import Registry
from deskpilot.tasks.events import EventHub
from deskpilot.tasks.executor import Executor
from deskpilot.tasks.models import Task
from deskpilot.tasks.store import Store
from deskpilot.tasks.worker import Worker


@dataclass
class TaskService:
    settings: TaskSettings
    store: Store
    hub: EventHub
    desktop: AsyncDesktop
    worker: Worker | None
    executor: Executor
    registry: Registry

    async def update(self, task_id: str, **changes: Any) -> Task:
        """A user's change (status, priority, description); moving a running task away stops the agent."""
        task = await self.store.update_task(task_id, **changes)
        if self.worker is not None and task.status != TaskStatus.IN_PROGRESS:
            await self.worker.cancel_task(task_id)
        return task

    async def delete(self, task_id: str) -> None:
        """Delete the task with its messages and files; a running task is cancelled first."""
        if self.worker is not None and self.worker.current_task_id == task_id:
            with contextlib.suppress(InvalidTransition):  # it may have just finished by itself
                await self.store.update_task(task_id, status=TaskStatus.CANCELLED)
            await self.worker.cancel_task(task_id)
        await self.store.delete_task(task_id)

    async def in_progress(self) -> Task | None:
        """The task IN_PROGRESS, this worker's own first."""
        return await self.store.in_progress(self.worker.worker_id if self.worker else None)

    async def take_over(self, task_id: str) -> Task:
        """A human takes control of the desktop: the agent takes no action until ``hand_back``."""
        task = await self.store.get_task(task_id)
        if task.status in FINISHED:
            raise BadRequest(f"takeover: task is {task.status}; nothing to take over")
        return await self.store.update_task(task_id, control=Role.USER)

    async def hand_back(self, task_id: str) -> Task:
        return await self.store.update_task(task_id, control=Role.ASSISTANT)

    async def models(self) -> list[dict[str, Any]]:
        """The executor's optional ``models()``; none without one."""
        listing = getattr(self.executor, "models", None)
        return list(await listing()) if listing is not None else []
