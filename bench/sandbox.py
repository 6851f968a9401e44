"""Sandbox benchmark: what a test pays for a real desktop with the client, the sandbox and the plugin.

  sandbox start -> ready, native (scripts/appliance.sh, all three /health green)   vs the same boot by the
                                                                                    tests' Appliance helper
  per-test reset (tasks cleared + POST /reset), with a terminal and files to clean  target <= 1 s
    and of an already clean desktop
  one screenshot through Desktop.screenshot() vs raw httpx (same request, same      target overhead <= 5 %
    body decoded), interleaved in the same run

With --image TAG, also the start of a sandbox from that image (needs a Docker engine).
Run: .venv/bin/python bench/sandbox.py [--n 60] [--resets 10] [--image TAG]  (as root). Not a test.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import httpx
import orjson
import pybase64

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import deskpilot
from deskpilot.client import Sandbox
from tests.support.appliance import Appliance


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.1f} ms"


def reference_boot() -> float:
    """The same appliance booted by the tests' helper (no sandbox, no clients): the floor."""
    appliance = Appliance().start()
    try:
        return appliance.wait_ready()
    finally:
        appliance.stop()
        appliance.cleanup()


def mess(box: Sandbox) -> None:
    box.desktop.application("terminal")
    for n in range(5):
        box.desktop.write_file(f"~/Documents/bench-{n}.txt", "x" * 1000)


def resets(box: Sandbox, n: int, dirty: bool) -> list[float]:
    out = []
    for _ in range(n):
        if dirty:
            mess(box)
        started = time.perf_counter()
        box.reset()
        out.append(time.perf_counter() - started)
    return out


def screenshots(box: Sandbox, n: int) -> tuple[list[float], list[float]]:
    """(client, raw httpx) seconds per screenshot, interleaved so load hits both alike."""
    raw = httpx.Client(base_url=box.desktop_url, timeout=60)
    headers = {"Authorization": f"Bearer {box.token}", "Content-Type": "application/json"}
    body = orjson.dumps({"action": "screenshot"})

    def by_hand() -> bytes:
        r = raw.post("/computer-use", content=body, headers=headers)
        r.raise_for_status()
        return pybase64.b64decode(orjson.loads(r.content)["data"]["image"])

    client_times, raw_times = [], []
    for _ in range(5):
        box.desktop.screenshot(), by_hand()
    for i in range(n):
        for fn, out in ((box.desktop.screenshot, client_times), (by_hand, raw_times))[:: 1 if i % 2 else -1]:
            started = time.perf_counter()
            fn()
            out.append(time.perf_counter() - started)
    raw.close()
    return client_times, raw_times


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=60, help="screenshots each way")
    ap.add_argument("--resets", type=int, default=10)
    ap.add_argument("--image", help="also start a sandbox from this image")
    args = ap.parse_args()

    floor = reference_boot()
    started = time.monotonic()
    with deskpilot.sandbox() as box:
        ready = time.monotonic() - started
        dirty = resets(box, args.resets, dirty=True)
        clean = resets(box, args.resets, dirty=False)
        client, raw = screenshots(box, args.n)
    print("sandbox, 2-core VM; medians")
    print(f"  native sandbox start -> ready       {ready:.2f} s   (appliance helper alone: {floor:.2f} s, "
          f"ratio {ready / floor:.2f}x)")  # fmt: skip
    print(f"  reset, terminal + 5 files to clean  {ms(statistics.median(dirty))}   "
          f"(p95 {ms(sorted(dirty)[int(0.95 * (len(dirty) - 1))])}, target <= 1000 ms)")  # fmt: skip
    print(f"  reset, clean desktop                {ms(statistics.median(clean))}")
    c, r = statistics.median(client), statistics.median(raw)
    overhead = 100 * (c / r - 1)
    print(
        f"  screenshot, Desktop.screenshot()    {ms(c)}   raw httpx {ms(r)}, "
        f"overhead {overhead:+.1f} % (target <= 5 %)"
    )
    if args.image:
        started = time.monotonic()
        with deskpilot.sandbox(image=args.image, timeout=300):
            print(f"  image sandbox start -> ready        {time.monotonic() - started:.2f} s")


if __name__ == "__main__":
    main()
