"""The desktop service of another checkout (before) against this one (after), on one display, same run.

Both services run as in production (their own uvicorn process) on the bench desktop (testbed/
bench_desktop.py); every case is measured on both in interleaved rounds (the order flips each round), so the
load of a shared machine weighs on both alike. Two services poll one display, so every figure is higher
than bench/desktop.py's; the ratio is what counts.

    git archive <commit> | tar -x -C /tmp/before
    .venv/bin/python bench/desktop_ab.py --before /tmp/before [--n 100] [--only click]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path

import httpx
import psutil

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from testbed.bench_desktop import Changer, bench_desktop
from testbed.net import free_port, wait_http

CLICK = {"action": "click_mouse", "coordinates": {"x": 1500, "y": 900}, "button": "left", "clickCount": 1}
# an agent's step: act, settle, look (what the click drew is drawn just before it by the case's `between`)
LOOK = {**CLICK, "settle": {"quietMs": 20, "maxMs": 1000}, "screenshot": {"width": 1280}}


def pct(samples: list[float], q: float) -> float:
    s = sorted(samples)
    return s[min(len(s) - 1, round(q * (len(s) - 1)))] * 1000


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--before", type=Path, help="an exported tree of the earlier commit")
    ap.add_argument("--n", type=int, default=100)
    ap.add_argument("--only", default="", help="the cases whose name holds this text")
    args = ap.parse_args()
    if args.before is None:  # `make bench` runs every bench: this one needs a tree to compare with
        print("nothing to compare: give --before DIR, an exported tree of an earlier commit")
        return
    with bench_desktop() as desk:
        port = free_port()
        argv = [sys.executable, "-m", "uvicorn", "--factory", "deskpilot.desktop.api:create_app"]
        argv += ["--port", str(port), "--workers", "1", "--log-level", "warning"]
        env = {"DESKTOP_DISPLAY": desk.display.name, "PYTHONPATH": str(args.before)}
        before = desk.display.spawn(argv, env=env, cwd=args.before)
        wait_http(f"http://127.0.0.1:{port}/health")
        clients = {
            "before": httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=30),
            "after": httpx.Client(base_url=desk.url, timeout=30),
        }
        change = Changer(desk.display.name)
        nothing: Callable[[], None] = lambda: None  # noqa: E731
        cases: dict[str, tuple[dict, Callable[[], None]]] = {
            "full frame, a pixel changed": ({"action": "screenshot"}, change.change),
            "full frame, unchanged": ({"action": "screenshot"}, nothing),
            **{
                f"{w} wide, {what}": ({"action": "screenshot", "width": w}, how)
                for what, how in (
                    ("a pixel changed", change.change),
                    ("whole screen", change.change_corners),
                    ("every row", change.change_every_row),
                )
                for w in (1366, 1280)
            },
            "click": (CLICK, nothing),
            "click with evidence": ({**CLICK, "evidence": True}, nothing),
            **{
                f"click, settle 20 ms, 1280 frame, {what}": (LOOK, how)
                for what, how in (
                    ("a pixel drawn", change.change),
                    ("whole screen drawn", change.change_corners),
                )
            },
        }
        print(f"before: {args.before}; after: this checkout; n={args.n} per cell, interleaved")
        for name, (body, between) in cases.items():
            if args.only not in name:
                continue
            samples: dict[str, list[float]] = {"before": [], "after": []}
            for side in clients:  # warm-up
                clients[side].post("/computer-use", json=body)
            for i in range(args.n):
                for side in ("before", "after") if i % 2 else ("after", "before"):
                    between()
                    t0 = time.perf_counter()
                    r = clients[side].post("/computer-use", json=body)
                    samples[side].append(time.perf_counter() - t0)
                    assert r.status_code == 200, r.text
            b, a = samples["before"], samples["after"]
            print(
                f"  {name:<32} before p50 {pct(b, 0.5):6.2f} (p95 {pct(b, 0.95):6.2f})   "
                f"after p50 {pct(a, 0.5):6.2f} (p95 {pct(a, 0.95):6.2f}) ms"
            )
        rss = [psutil.Process(p.pid).memory_info().rss / 2**20 for p in (before, desk.service)]
        print(f"  RSS: before {rss[0]:.0f} MiB, after {rss[1]:.0f} MiB; load {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
