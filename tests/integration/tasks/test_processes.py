"""Several worker processes on one database: no task run twice, none lost; a worker killed with
SIGKILL mid-task loses its task to another worker once the lease expires."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

from deskpilot.tasks.store import Store
from testbed.task_service import run, with_store
from testbed.timing import wait_until

ROOT = Path(__file__).resolve().parents[3]


def start_worker(
    db_url: str, out: Path, mode: str, lease: float = 5.0, poll: float = 0.3
) -> subprocess.Popen:
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tests.integration.tasks.worker_proc",
            db_url,
            str(out),
            mode,
            str(lease),
            str(poll),
        ],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        start_new_session=True,
    )


def lines(out: Path) -> list[str]:
    return out.read_text().splitlines() if out.exists() else []


def stop(*procs: subprocess.Popen) -> None:
    for p in procs:
        if p.poll() is None:
            p.send_signal(signal.SIGTERM)
    for p in procs:
        try:
            p.wait(timeout=10)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


def statuses(db_url: str) -> Counter:
    async def go(store: Store):
        tasks, _ = await store.list_tasks(limit=1000)
        return Counter(t.status for t in tasks)

    return with_store(db_url, go)


@pytest.mark.timeout(120)
def test_two_worker_processes_run_50_tasks_each_exactly_once(db_url: str, tmp_path: Path) -> None:
    # migrate once up front so the workers' own (idempotent) migrations race on nothing but the lock
    run(_migrate(db_url))
    out = tmp_path / "runs.log"
    workers = [start_worker(db_url, out, "record") for _ in range(2)]
    try:
        wait_until(lambda: sum(line.startswith("ready ") for line in lines(out)) == 2, 30)

        async def create(store: Store):
            return [
                (await store.create_task(f"task {i}", priority=("LOW", "HIGH")[i % 2])).id for i in range(50)
            ]

        ids = with_store(db_url, create)
        wait_until(lambda: statuses(db_url).get("COMPLETED") == 50, 60, interval=0.1)
        runs = [line.split() for line in lines(out) if not line.startswith("ready ")]
        per_task = Counter(task_id for task_id, _ in runs)
        assert set(per_task) == set(ids)  # none lost
        assert max(per_task.values()) == 1  # none run twice
        by_worker = Counter(worker for _, worker in runs)
        assert len(by_worker) == 2, by_worker  # both processes took part
    finally:
        stop(*workers)


@pytest.mark.timeout(120)
def test_task_of_a_worker_killed_mid_task_is_reclaimed_after_its_lease(db_url: str, tmp_path: Path) -> None:
    run(_migrate(db_url))
    out = tmp_path / "runs.log"
    lease = 1.5
    doomed = start_worker(db_url, out, "hang", lease=lease)
    survivor = None
    try:
        wait_until(lambda: any(line.startswith("ready ") for line in lines(out)), 30)
        task_id = with_store(db_url, lambda s: _create_id(s, "survive me"))
        wait_until(lambda: f"started {task_id}" in lines(out), 10)
        os.killpg(doomed.pid, signal.SIGKILL)
        doomed.wait(timeout=10)
        killed_at = time.monotonic()
        owner = with_store(db_url, lambda s: s.get_task(task_id))
        assert owner.status == "IN_PROGRESS" and owner.lease_owner == f"proc-{doomed.pid}"
        survivor = start_worker(db_url, out, "record", lease=lease)
        wait_until(lambda: any(line.startswith(task_id + " ") for line in lines(out)), lease + 15)
        reclaimed_after = time.monotonic() - killed_at
        wait_until(lambda: with_store(db_url, lambda s: s.get_task(task_id)).status == "COMPLETED", 10)
        assert reclaimed_after < lease + 10
        done = with_store(db_url, lambda s: s.get_task(task_id))
        assert done.lease_owner is None and done.executed_at == owner.executed_at
    finally:
        stop(doomed, *([survivor] if survivor else []))


async def _migrate(db_url: str) -> None:
    store = await Store.open(db_url)
    await store.close()


async def _create_id(store: Store, description: str) -> str:
    return (await store.create_task(description)).id
