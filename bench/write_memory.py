"""The desktop service's memory under concurrent big writes: six ``write_file`` requests of 99 MiB at once.

Two desktop services on one display (its own Xvfb), each in its own uvicorn process as in the appliance,
each writing into a private directory of the desktop user's: one as the appliance runs it (the budget of
in-flight request bodies at its default, ``DESKTOP_BODY_BUDGET_BYTES``), one with the budget out of the way
(8 GiB). Each is asked, in order: nothing (its peak RSS once started), one 99 MiB write alone (the
baseline), then six at once. After each step the script reads the service's peak resident memory
(``VmHWM`` of ``/proc/<pid>/status``), and prints it with the wall time of the step.

    .venv/bin/python bench/write_memory.py [--mib 99] [--writers 6]
"""

from __future__ import annotations

import argparse
import base64
import os
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from testbed.desktop_files import private_files_dir
from testbed.desktop_process import desktop_process, peak_rss
from testbed.xvfb import Display, start_xvfb

MiB = 1 << 20


@dataclass
class Service:
    name: str
    url: str
    pid: int
    files: Path


@contextmanager
def service(display: Display, name: str, env: dict[str, str]) -> Iterator[Service]:
    with (
        private_files_dir() as files,
        desktop_process(display, DESKTOP_FILES_DIR=str(files), **env) as (url, pid),
    ):
        yield Service(name, url, pid, files)


def body(path: str, encoded: bytes) -> bytes:
    return b'{"action":"write_file","path":"' + path.encode() + b'","data":"' + encoded + b'"}'


def write(url: str, content: bytes) -> float:
    started = time.perf_counter()
    with httpx.Client(timeout=600) as http:
        r = http.post(f"{url}/computer-use", content=content, headers={"Content-Type": "application/json"})
    if r.status_code != 200:
        raise RuntimeError(f"write_file answered {r.status_code}: {r.text[:300]}")
    return time.perf_counter() - started


def measure(svc: Service, encoded: bytes, size: int, writers: int) -> list[tuple[str, int, float]]:
    """(step, peak RSS after it, seconds it took) for: idle, one write, ``writers`` at once."""
    rows = [("started, idle", peak_rss(svc.pid), 0.0)]
    seconds = write(svc.url, body("single.bin", encoded))
    rows.append(("one write", peak_rss(svc.pid), seconds))
    bodies = [body(f"concurrent-{i}.bin", encoded) for i in range(writers)]
    started = time.perf_counter()
    with ThreadPoolExecutor(writers) as pool:
        list(pool.map(lambda content: write(svc.url, content), bodies))
    rows.append((f"{writers} writes at once", peak_rss(svc.pid), time.perf_counter() - started))
    for i in range(writers):
        assert (svc.files / f"concurrent-{i}.bin").stat().st_size == size
    return rows


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mib", type=int, default=99, help="size of each file written")
    ap.add_argument("--writers", type=int, default=6, help="concurrent writes")
    args = ap.parse_args()
    size = args.mib * MiB
    encoded = base64.b64encode(os.urandom(size))
    display = start_xvfb()
    results: dict[str, list[tuple[str, int, float]]] = {}
    try:
        variants = {
            "default budget": {},
            "budget off (8 GiB)": {"DESKTOP_BODY_BUDGET_BYTES": str(8 << 30)},
        }
        for name, env in variants.items():
            with service(display, name, env) as svc:
                results[name] = measure(svc, encoded, size, args.writers)
    finally:
        display.stop()
    base64_mib = len(encoded) / MiB
    print(f"write_file of {args.mib} MiB ({base64_mib:.0f} MiB of base64): peak RSS (VmHWM) of the service")
    for name, rows in results.items():
        print(f"  {name}:")
        for step, peak, seconds in rows:
            took = f"  {seconds:6.2f} s" if seconds else ""
            print(f"    {step:<20}{peak / MiB:8.0f} MiB{took}")
        (_, idle, _), (_, one, _), (_, many, _) = rows
        print(f"    {args.writers} at once over idle: {(many - idle) / (one - idle):.2f}x one write's")


if __name__ == "__main__":
    main()
