"""Task events across processes: the latency from a change through one task service to the event on another
service's ``/ws`` (PostgreSQL LISTEN/NOTIFY, the fan-out of deskpilot/tasks/fanout.py), against the same
event on the changing service's own ``/ws`` in the same run.                         target p50 <= 20 ms

Both services run on a temporary PostgreSQL (Debian postgresql), each in its own uvicorn thread and event
loop, over real HTTP and WebSockets.

    .venv/bin/python bench/fleet.py [--n 100]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from websockets.sync.client import connect

from tests.integration.tasks.conftest import serve
from tests.integration.tasks.test_fanout import listening
from tests.support.postgres import PostgresServer


def first_created(ws) -> float:
    while True:
        frame = json.loads(ws.recv(timeout=10))
        if frame["event"] == "task_created":
            return time.perf_counter()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=100)
    args = ap.parse_args()
    pg = PostgresServer().start()
    try:
        url = pg.create_database()
        with serve(url) as a, serve(url) as b:
            listening(a)
            listening(b)
            local, remote = [], []
            with (
                connect(a.ws_url + "?events=task_created") as on_a,
                connect(b.ws_url + "?events=task_created") as on_b,
            ):
                for i in range(args.n + 5):
                    started = time.perf_counter()
                    a.post("/tasks", json={"description": f"bench {i}"}).raise_for_status()
                    t_a, t_b = first_created(on_a), first_created(on_b)
                    if i >= 5:
                        local.append((t_a - started) * 1000)
                        remote.append((t_b - started) * 1000)
    finally:
        pg.stop()
    lp50, rp50 = statistics.median(local), statistics.median(remote)
    print("task_created after POST /tasks, p50 (p95)")
    print(
        f"  on the same service's /ws          {lp50:7.2f} ms ({sorted(local)[int(len(local) * 0.95)]:.2f})"
    )
    print(
        f"  on another service's /ws (fan-out) {rp50:7.2f} ms ({sorted(remote)[int(len(remote) * 0.95)]:.2f})"
    )
    print(f"  fan-out adds {rp50 - lp50:.2f} ms   target p50 <= 20 ms: {'met' if rp50 <= 20 else 'NOT met'}")


if __name__ == "__main__":
    main()
