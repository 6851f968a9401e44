"""A bare worker process for the multi-process tests:

    python -m tests.integration.tasks.worker_proc DB_URL OUT_FILE MODE LEASE_SECONDS POLL_SECONDS

MODE ``record`` appends "<task id> <worker id>" to OUT_FILE for each task and completes it;
MODE ``hang`` appends "started <task id>" and never finishes (to be killed). "ready <worker id>" is
appended once the worker is claiming.
"""

from __future__ import annotations

import asyncio
import os
import sys

from deskpilot.computer.client import AsyncDesktop
from deskpilot.taskapi.types import TaskStatus
from deskpilot.tasks.executor import TaskContext
from deskpilot.tasks.store import Store
from deskpilot.tasks.worker import Worker


def append(path: str, line: str) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, (line + "\n").encode())
    finally:
        os.close(fd)


class Recording:
    def __init__(self, out: str, worker_id: str) -> None:
        self.out, self.worker_id = out, worker_id

    async def execute(self, task_id: str, ctx: TaskContext) -> None:
        append(self.out, f"{task_id} {self.worker_id}")
        await asyncio.sleep(0.01)
        await ctx.update(status=TaskStatus.COMPLETED)


class Hanging:
    def __init__(self, out: str) -> None:
        self.out = out

    async def execute(self, task_id: str, ctx: TaskContext) -> None:
        append(self.out, f"started {task_id}")
        await asyncio.Event().wait()


async def main(url: str, out: str, mode: str, lease: float, poll: float) -> None:
    worker_id = f"proc-{os.getpid()}"
    store = await Store.open(url)
    executor = Recording(out, worker_id) if mode == "record" else Hanging(out)
    worker = Worker(store, executor, AsyncDesktop("http://127.0.0.1:9"), worker_id=worker_id,
                    lease_seconds=lease, poll_seconds=poll)  # fmt: skip
    await worker.start()
    append(out, f"ready {worker_id}")
    await asyncio.Event().wait()


if __name__ == "__main__":
    url, out, mode, lease, poll = sys.argv[1:6]
    asyncio.run(main(url, out, mode, float(lease), float(poll)))
