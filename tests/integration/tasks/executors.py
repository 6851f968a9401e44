"""Executors for tests: they drive the task through ctx the way the agent loop will, and record what
happened in a thread-safe log the test (in another thread) reads."""

from __future__ import annotations

import asyncio
import threading

from deskpilot.taskapi.types import TaskStatus
from deskpilot.tasks.executor import TaskContext


class ScriptedExecutor:
    """Behaviour chosen by the task description's first word:
    block    -> loop forever, one 'step' per 20 ms, each after ctx.wait_for_control()
    complete -> append an ASSISTANT message, COMPLETED with result {"ok": true}
    help     -> NEEDS_HELP (the second run, after a user reply, completes)
    raise    -> RuntimeError("boom")
    return   -> return leaving the task IN_PROGRESS
    """

    def __init__(self) -> None:
        self.log: list[tuple[str, str]] = []
        self._lock = threading.Lock()

    def record(self, task_id: str, what: str) -> None:
        with self._lock:
            self.log.append((task_id, what))

    def events(self, task_id: str | None = None) -> list[str]:
        with self._lock:
            return [w for t, w in self.log if task_id is None or t == task_id]

    def started(self) -> list[str]:
        with self._lock:
            return [t for t, w in self.log if w == "start"]

    async def execute(self, task_id: str, ctx: TaskContext) -> None:
        task = await ctx.task()
        word = task.description.split()[0]
        self.record(task_id, "start")
        try:
            if word == "block":
                while True:
                    await ctx.wait_for_control()
                    self.record(task_id, "step")
                    await asyncio.sleep(0.02)
            elif word == "complete":
                await ctx.add_message([{"type": "text", "text": "done"}])
                await ctx.update(status=TaskStatus.COMPLETED, result={"ok": True})
            elif word == "help":
                if self.events(task_id).count("start") > 1:
                    await ctx.update(status=TaskStatus.COMPLETED)
                else:
                    await ctx.add_message([{"type": "text", "text": "which file?"}])
                    await ctx.update(status=TaskStatus.NEEDS_HELP)
            elif word == "raise":
                raise RuntimeError("boom")
            elif word == "return":
                return
        except asyncio.CancelledError:
            self.record(task_id, "cancelled")
            raise
