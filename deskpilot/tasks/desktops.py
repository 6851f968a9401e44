"""The fleet's desktops: each worker's desktop by name, its labels, where it answers, and what it is doing.

Every worker announces its desktop in the ``desktops`` table when it starts and again every third of its
lease (a heartbeat, with whether its desktop service is healthy), and withdraws it when it stops. ``GET
/desktops`` reads the table with the tasks running on each: a desktop is ``unhealthy`` when its desktop
service fails or its worker has not been heard from within a lease, ``taken_over`` when a human holds it
(``POST /desktops/{name}/takeover``, or control of the task it runs), ``running`` a task, or ``idle``. A
desktop taken over claims no new task (``deskpilot.tasks.leases``).

Placement: a task may name a desktop (``desktop``) or a label (``desktopLabel``) the desktop must have;
with neither, any free desktop takes it.
"""

from __future__ import annotations

import re
import socket
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import delete, select, update

from deskpilot.config import TaskSettings
from deskpilot.errors import DesktopNotFound
from deskpilot.taskapi.types import DESKTOP_NAME_PATTERN, DesktopState, Role, TaskStatus, iso
from deskpilot.tasks.models import FleetDesktop, Task
from deskpilot.tasks.store import Store

_NAME = re.compile(DESKTOP_NAME_PATTERN)


@dataclass(frozen=True)
class Identity:
    """One desktop of the fleet, as its worker knows itself."""

    name: str
    labels: tuple[str, ...]
    url: str  # where the rest of the fleet reaches its desktop service

    @classmethod
    def from_settings(cls, settings: TaskSettings) -> Identity:
        return cls(
            settings.desktop_name or host_desktop_name(),
            tuple(settings.desktop_labels),
            (settings.desktop_fleet_url or settings.desktop_url).rstrip("/"),
        )


def host_desktop_name() -> str:
    """The host name as a desktop name: its first label when the whole name is not a valid one."""
    host = socket.gethostname()
    for candidate in (host, host.split(".", 1)[0][:63]):
        if _NAME.fullmatch(candidate):
            return candidate
    return "desktop"


class Registry:
    """The ``desktops`` table of one ``Store``."""

    def __init__(self, store: Store) -> None:
        self.store = store

    async def announce(
        self, me: Identity, worker_id: str, lease_seconds: float, problem: str | None = None
    ) -> None:
        """The worker's heartbeat: its desktop is there (healthy unless ``problem``) for another lease."""
        now = self.store.now()
        values: dict[str, Any] = {
            "labels": list(me.labels),
            "url": me.url,
            "worker_id": worker_id,
            "healthy": problem is None,
            "problem": problem,
            "seen_at": now,
            "expires_at": now + timedelta(seconds=lease_seconds),
        }
        async with self.store.writing() as session:
            row = await session.get(FleetDesktop, me.name, with_for_update=True)
            if row is None:
                session.add(FleetDesktop(name=me.name, taken_over=False, started_at=now, **values))
                return
            if row.worker_id != worker_id:  # a new worker for this desktop (a restart)
                row.started_at = now
            for key, value in values.items():
                setattr(row, key, value)

    async def withdraw(self, name: str, worker_id: str) -> None:
        """The worker stops: its desktop leaves the fleet (unless another worker announced it since)."""
        async with self.store.writing() as session:
            await session.execute(
                delete(FleetDesktop).where(FleetDesktop.name == name, FleetDesktop.worker_id == worker_id)
            )

    async def take_over(self, name: str, taken: bool) -> dict[str, Any]:
        """A human takes the desktop (its worker claims nothing new) or hands it back."""
        async with self.store.writing() as session:
            found = await session.scalar(
                update(FleetDesktop)
                .where(FleetDesktop.name == name)
                .values(taken_over=taken)
                .returning(FleetDesktop.name)
                .execution_options(synchronize_session=False)
            )
            if found is None:
                raise DesktopNotFound(name)
            await self.store.notify(session, name)  # wakes the workers: the released one claims again
        (desktop,) = [d for d in await self.listing() if d["name"] == name]
        return desktop

    async def listing(self) -> list[dict[str, Any]]:
        """Every desktop with its state and the task it runs, by name."""
        async with self.store.reading() as session:
            rows = list((await session.scalars(select(FleetDesktop).order_by(FleetDesktop.name))).all())
            running = (
                await session.execute(
                    select(Task.id, Task.description, Task.control, Task.executed_on, Task.lease_owner).where(
                        Task.status == TaskStatus.IN_PROGRESS, Task.executed_on.in_([r.name for r in rows])
                    )
                )
            ).all()
        now = self.store.now()
        tasks = {(t.executed_on, t.lease_owner): t for t in running}
        return [desktop_json(row, tasks.get((row.name, row.worker_id)), now) for row in rows]


def desktop_state(row: FleetDesktop, task: Any, now: datetime) -> DesktopState:
    if not row.healthy or row.expires_at < now:
        return DesktopState.UNHEALTHY
    if row.taken_over or (task is not None and task.control == Role.USER):
        return DesktopState.TAKEN_OVER
    return DesktopState.RUNNING if task is not None else DesktopState.IDLE


def desktop_json(row: FleetDesktop, task: Any, now: datetime) -> dict[str, Any]:
    """``task``: the row (id, description, control) of the task the desktop's worker runs, or None."""
    stale = row.expires_at < now
    return {
        "name": row.name,
        "labels": row.labels,
        "url": row.url,
        "state": desktop_state(row, task, now),
        "problem": "its worker has not been heard from within a lease" if stale else row.problem,
        "takenOver": row.taken_over,
        "task": None
        if task is None
        else {"id": task.id, "description": task.description, "control": task.control},
        "workerId": row.worker_id,
        "startedAt": iso(row.started_at),
        "seenAt": iso(row.seen_at),
    }
