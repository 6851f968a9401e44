"""What freezing a service's start (deskpilot/collector.py) does to its requests: the full garbage collections
that walk everything the process holds, and the requests that wait behind them.

    .venv/bin/python bench/collector.py [--clicks 12000] [--tasks 6000] [--processes 2]

The desktop and the task service run side by side as in production (their own uvicorn processes, one worker,
the token required, metrics on), ``--processes`` processes each way:

  frozen     as built: what the service made to start is frozen while it serves (``collector.serving``)
  unfrozen   the same code with ``collector.serving`` doing nothing (bench/gc_probe.py): the build before

Each process counts the full collections its main thread (the event loop) ran and times each one
(``gc.callbacks``, bench/gc_probe.py). The requests, in rounds of 200 per process interleaved in a new random
order each round: ``click_mouse`` on an idle area (no settle) and ``POST /tasks`` (SQLite on tmpfs, no
worker). Reported per way: the p50, p99, p99.9 and the slowest request, the full collections and the longest,
and the main thread's CPU a request. Not a test: figures vary with load.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import httpx  # noqa: E402

from bench.served import CLICK, TOKEN, Served, interleave  # noqa: E402
from deskpilot.security import digest  # noqa: E402
from testbed.security import VARIABLES  # noqa: E402
from testbed.xvfb import start_xvfb  # noqa: E402

TASK = b'{"description": "a task of the collector bench"}'
WAYS = {"frozen": "0", "unfrozen": "1"}
ROUND = 200


@dataclass
class Collected:
    """The full collections of one way's processes: each one's milliseconds, and the objects frozen."""

    pauses_ms: list[float] = field(default_factory=list)
    frozen: int = 0


def variants(factory: str, env: dict[str, str], processes: int, state: str) -> list[Served]:
    return [
        Served(
            way,
            "bench.gc_probe:app",
            {
                **env,
                "BENCH_FACTORY": factory,
                "BENCH_UNFROZEN": unfrozen,
                "BENCH_GC_OUT": f"{state}/{factory.split('.')[1]}-{way}-{i}.json",
                "TASKS_DATABASE_URL": f"sqlite:///{state}/{way}-{i}.db",
            },
        )
        for way, unfrozen in WAYS.items()
        for i in range(processes)
    ]


def collections(served: Served) -> dict[str, Any]:
    """The full collections of its main thread so far (SIGUSR1 makes it write them)."""
    assert served.proc is not None
    out = Path(served.env["BENCH_GC_OUT"])
    out.unlink(missing_ok=True)
    os.kill(served.proc.pid, signal.SIGUSR1)
    deadline = time.monotonic() + 10
    while not out.exists() or not out.stat().st_size:
        if time.monotonic() > deadline:
            raise TimeoutError(f"{served.name} wrote no collections")
        time.sleep(0.02)
    time.sleep(0.05)
    return json.loads(out.read_text())


def measure(group: list[Served], path: str, body: bytes, status: int, total: int) -> dict[str, Collected]:
    """``total`` requests to each process; what each way's processes collected meanwhile."""
    headers = {"Content-Type": "application/json", "Authorization": f"Bearer {TOKEN}"}
    clients = [httpx.Client(base_url=v.url, headers=headers, timeout=30) for v in group]
    try:
        for v, c in zip(group, clients, strict=True):
            for _ in range(100):
                r = c.post(path, content=body)
            assert r.status_code == status, (v.name, r.status_code, r.text)
            v.clear()
        before = {id(v): collections(v) for v in group}
        interleave(list(zip(group, clients, strict=True)), "POST", path, body, max(1, total // ROUND), ROUND)
        collected = {way: Collected() for way in WAYS}
        for v in group:
            after = collections(v)
            collected[v.name].pauses_ms += after["pauses_ms"][len(before[id(v)]["pauses_ms"]) :]
            collected[v.name].frozen = after["frozen"]
        return collected
    finally:
        for c in clients:
            c.close()


def at(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000


def report(title: str, group: list[Served], collected: dict[str, Collected]) -> None:
    print(f"  {title}")
    for way in WAYS:
        processes = [v for v in group if v.name == way]
        pooled = [s for v in processes for s in v.samples]
        full = collected[way].pauses_ms
        cpu = statistics.median(v.cpu_main / len(v.samples) / 1000 for v in processes)
        print(
            f"    {way:<9} p50 {at(pooled, 0.5):6.3f}  p99 {at(pooled, 0.99):6.3f}  "
            f"p99.9 {at(pooled, 0.999):7.3f}  max {max(pooled) * 1000:7.2f} ms   "
            f"full collections {len(full)}, longest "
            f"{max(full, default=0):6.2f} ms, {sum(full) / len(pooled) * 1000:5.1f} µs a request   "
            f"main thread CPU {cpu:6.1f} µs a request   frozen objects {collected[way].frozen:,}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--clicks", type=int, default=12000, help="per process")
    parser.add_argument("--tasks", type=int, default=6000, help="task creations per process")
    parser.add_argument("--processes", type=int, default=2, help="of each service, each way")
    args = parser.parse_args()
    own = ("OTEL_", "DESKTOP_", "AGENT_", "DESKPILOT_", "TASKS_", "BENCH_")
    base = {k: v for k, v in os.environ.items() if k.upper() not in VARIABLES and not k.startswith(own)}
    base["PYTHONHASHSEED"] = "0"
    display = start_xvfb()
    shm = "/dev/shm" if os.path.isdir("/dev/shm") else None
    state = tempfile.TemporaryDirectory(prefix="deskpilot-bench-collector-", dir=shm)
    desktop_env = {**base, "DESKTOP_DISPLAY": display.name, "DESKPILOT_TOKEN_SHA256": digest(TOKEN)}
    task_env = {
        **base, "DESKPILOT_TOKEN": TOKEN, "TASKS_WORKER_ENABLED": "false",
        "TASKS_DESKTOP_FILES_DIR": "/nonexistent/deskpilot-bench/Desktop",
    }  # fmt: skip
    desktop = variants("deskpilot.desktop.api:create_app", desktop_env, args.processes, state.name)
    tasks = variants("deskpilot.tasks.app:create_app", task_env, args.processes, state.name)
    try:
        for v in [*desktop, *tasks]:
            v.start(access_log=False)
        print(
            f"Deskpilot collector bench: {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.2f}; "
            f"{args.processes} processes each way, requests in interleaved rounds of {ROUND}, keep-alive"
        )
        collected = measure(desktop, "/computer-use", CLICK, 200, args.clicks)
        report(f"click_mouse on an idle area, desktop service ({args.clicks} a process)", desktop, collected)
        collected = measure(tasks, "/tasks", TASK, 201, args.tasks)
        report(f"POST /tasks, task service ({args.tasks} a process)", tasks, collected)
    finally:
        for v in [*desktop, *tasks]:
            v.stop()
        display.stop()
        state.cleanup()


if __name__ == "__main__":
    main()
