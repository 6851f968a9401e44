"""The steps others took on a task's desktop while it ran, for its trajectory (``trajectory.py``).

The agent's own steps come from the task's conversation. What API and MCP clients did on the same desktop,
and a human during a takeover, is in the desktop service's journal (``GET /journal``, docs/desktop-api.md):
``journal_steps`` reads the input actions of those actors within the task's run window (from its first
start to its end, or now) with their frames; ``trajectory.trajectory`` interleaves them with the agent's
steps by time.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from deskpilot.computer.client import AsyncDesktop, DesktopClientError
from deskpilot.taskapi.types import iso
from deskpilot.tasks.models import Task

if TYPE_CHECKING:
    from deskpilot.tasks.service import TaskService

log = logging.getLogger(__name__)

OTHERS = "api,mcp,human"  # the agent's steps are in the conversation already
PAGE = 1000
MAX_STEPS = 10_000  # a trajectory's bound on others' steps (the journal keeps 10,000 entries by default)
OBSERVATION = ("settle", "screenshot", "evidence")  # what the sender asked to see, not what it did


@dataclass(frozen=True)
class JournalStep:
    """One action of another actor, as the trajectory writes it; ``frame`` is the PNG after it."""

    time: str  # ISO 8601 UTC, as the agent's steps
    actor: str
    action: dict[str, Any]
    outcome: dict[str, Any]  # {"error": bool, "text": str}, as the agent's steps
    frame: bytes | None


def run_window(task: Task, now: datetime | None = None) -> tuple[str, str] | None:
    """(start, end) of the task's runs as ISO times, or None when it never ran."""
    if task.executed_at is None:
        return None
    end = task.completed_at or now or datetime.now(UTC)
    return iso(task.executed_at) or "", iso(end) or ""


def to_step(entry: dict[str, Any], frame: bytes | None) -> JournalStep:
    action = {k: v for k, v in entry["action"].items() if k not in OBSERVATION}
    outcome = entry["outcome"]
    text = "" if outcome.get("ok") else f"{outcome.get('status')}: {outcome.get('error', '')}"
    return JournalStep(
        entry["time"], entry["actor"], action, {"error": not outcome.get("ok"), "text": text}, frame
    )


async def journal_steps(desktop: AsyncDesktop, start: str, end: str) -> list[JournalStep]:
    """Input actions of API clients, MCP clients and humans between ``start`` and ``end`` (ISO times)."""
    entries: list[dict[str, Any]] = []
    since = 0
    while len(entries) < MAX_STEPS:
        page = await desktop.journal(since, PAGE, OTHERS)
        entries += [e for e in page["entries"] if e["input"] and start <= e["time"] <= end]
        if page["next"] >= page["latest"] or page["next"] == since:
            break
        since = page["next"]
    steps = []
    for entry in entries[:MAX_STEPS]:
        frame = await desktop.journal_frame(entry["frameAfter"]) if entry["frameAfter"] else None
        steps.append(to_step(entry, frame))
    return steps


async def task_journal_steps(service: TaskService, task: Task) -> list[JournalStep]:
    """Others' steps on the desktop ``task`` ran on (this service's, or another of the fleet by its name);
    none when that desktop cannot be asked (its steps are then missing, not the trajectory)."""
    window = run_window(task)
    if window is None:
        return []
    desktop, own = service.desktop, True
    if task.executed_on:
        rows = {row["name"]: row["url"] for row in await service.registry.listing()}
        url = rows.get(task.executed_on)
        if url and url.rstrip("/") != desktop.base_url:
            desktop, own = desktop.elsewhere(url), False
    try:
        return await journal_steps(desktop, *window)
    except DesktopClientError as exc:
        log.warning("the desktop's journal could not be read", extra={"task": task.id, "error": exc.message})
        return []
    finally:
        if not own:
            await desktop.aclose()
