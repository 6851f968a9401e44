"""Trajectory retention: ``TASKS_TRAJECTORY_RETENTION_DAYS`` after a finished task (COMPLETED, FAILED,
CANCELLED) last changed, its trajectory is no longer served (410) nor kept.

A trajectory is not stored apart: it is built on request from the task's conversation, whose weight is the
frames (a settled screenshot per step, ~0.1-1 MB each), while the steps themselves are the conversation's
text, which the task API serves as long as the task exists. So keeping a trajectory means keeping those
frames: past retention, a sweep (at start, then hourly) replaces every image of the task's messages with a
short text saying why, and marks the task (``frames_dropped_at``). The task, its messages' text and its
files stay until the task is deleted. A task that runs again later records new frames, kept anew.
"""

from __future__ import annotations

import asyncio
import logging
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import or_, select

from deskpilot.errors import TrajectoryExpired
from deskpilot.taskapi.types import TaskStatus
from deskpilot.tasks.models import Message, Task, utcnow
from deskpilot.tasks.store import Store

log = logging.getLogger(__name__)

FINISHED = (TaskStatus.COMPLETED, TaskStatus.FAILED, TaskStatus.CANCELLED)
DROPPED = "[frame dropped: the task is past its trajectory retention, TASKS_TRAJECTORY_RETENTION_DAYS]"
SWEEP_SECONDS = 3600.0
BATCH = 50  # tasks per transaction


def check_served(task: Task, days: float, now: datetime | None = None) -> None:
    """Raise ``TrajectoryExpired`` (410) when ``task``'s trajectory is past retention."""
    if days <= 0 or task.status not in FINISHED:
        return
    until = task.updated_at + timedelta(days=days)
    if until < (now or utcnow()):
        raise TrajectoryExpired(
            f"trajectory: task {task.id} finished on {task.updated_at:%Y-%m-%d}; its trajectory was kept "
            f"{days:g} days (TASKS_TRAJECTORY_RETENTION_DAYS), until {until:%Y-%m-%d %H:%M} UTC"
        )


def without_frames(blocks: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], int]:
    """``blocks`` with every image (in tool results too) replaced by a text, and how many there were."""
    out: list[dict[str, Any]] = []
    dropped = 0
    for block in blocks:
        if block.get("type") == "image":
            out.append({"type": "text", "text": DROPPED})
            dropped += 1
        elif block.get("type") == "tool_result" and isinstance(block.get("content"), list):
            content, inner = without_frames(block["content"])
            out.append({**block, "content": content})
            dropped += inner
        else:
            out.append(block)
    return out, dropped


async def drop_expired_frames(store: Store, days: float, now: datetime | None = None) -> int:
    """Drop the frames of every finished task past retention not swept since it last changed; the
    number of frames dropped."""
    if days <= 0:
        return 0
    now = now or utcnow()
    cutoff = now - timedelta(days=days)
    dropped = 0
    while True:
        async with store.writing() as session:
            tasks = (
                await session.scalars(
                    select(Task)
                    .where(Task.status.in_(FINISHED), Task.updated_at < cutoff)
                    .where(or_(Task.frames_dropped_at.is_(None), Task.frames_dropped_at < Task.updated_at))
                    .limit(BATCH)
                )
            ).all()
            for task in tasks:
                messages = await session.scalars(select(Message).where(Message.task_id == task.id))
                for message in messages:
                    content, count = without_frames(message.content or [])
                    if count:
                        message.content, message.updated_at = content, store.now()
                        dropped += count
                task.frames_dropped_at = now  # not updated_at: dropping frames is no change of the task
        if len(tasks) < BATCH:
            return dropped


async def sweep_forever(store: Store, days: float) -> None:
    """The retention sweep, at start and every ``SWEEP_SECONDS``, for the service's lifetime."""
    while True:
        try:
            dropped = await drop_expired_frames(store, days)
            if dropped:
                log.info("trajectory retention: frames dropped", extra={"frames": dropped, "days": days})
        except Exception:  # a failed sweep is retried at the next one, never fatal for the service
            log.exception("trajectory retention: the sweep failed")
        await asyncio.sleep(SWEEP_SECONDS)
