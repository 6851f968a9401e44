"""The journal's cost on the hot path: each /computer-use action with recording on against the same with it
off, in the same run, interleaved.

Two desktop services drive one display (its own Xvfb with terminals and an editor,
testbed/bench_desktop.py): one as the appliance runs it (journal on, its defaults), one with
``DESKTOP_JOURNAL=false``. Each round sends every action to both, in alternating order, with a pause after
the round so the journaling service takes its frames (off the request path) while the run goes on, as it
would. It prints, per action, the median on, off, and the difference; then what one ``record`` costs in
process.

    .venv/bin/python bench/journal.py [--rounds 150] [--pause 0.35]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from deskpilot.computer.actions import parse_action
from deskpilot.config import DesktopSettings
from deskpilot.desktop.journal import Journal, outcome_of
from testbed import ROOT
from testbed.bench_desktop import bench_desktop
from testbed.net import free_port, wait_http

ACTIONS: dict[str, dict[str, Any]] = {
    "move_mouse": {"action": "move_mouse", "coordinates": {"x": 700, "y": 600}},
    "click_mouse": {
        "action": "click_mouse",
        "coordinates": {"x": 400, "y": 300},
        "button": "left",
        "clickCount": 1,
    },
    "scroll": {
        "action": "scroll",
        "coordinates": {"x": 400, "y": 300},
        "direction": "down",
        "scrollCount": 1,
    },
    "type_text": {"action": "type_text", "text": "hello"},
    "cursor_position": {"action": "cursor_position"},
    "move+frame (agent)": {
        "action": "move_mouse",
        "coordinates": {"x": 710, "y": 610},
        "screenshot": {"width": 1280},
    },
}


def timed(http: httpx.Client, body: dict[str, Any]) -> float:
    started = time.perf_counter()
    http.post("/computer-use", json=body).raise_for_status()
    return (time.perf_counter() - started) * 1000


def record_cost(n: int = 20_000) -> float:
    """Microseconds of one Journal.record of a click, on an event loop, frames off."""
    settings = DesktopSettings(journal_frames=0)

    async def settle(quiet: int, most: int) -> tuple[float, bool]:
        return 0.0, True

    journal = Journal(settings, lambda: b"", settle)
    action = parse_action(ACTIONS["click_mouse"])

    async def run() -> float:
        started = time.perf_counter()
        for _ in range(n):
            journal.record("api", action, outcome_of("ok"))
        return (time.perf_counter() - started) / n * 1e6

    try:
        return asyncio.run(run())
    finally:
        journal.close()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=150)
    ap.add_argument("--pause", type=float, default=0.35, help="seconds after each round")
    args = ap.parse_args()
    with bench_desktop() as desk:
        port = free_port()
        argv = [sys.executable, "-m", "uvicorn", "--factory", "deskpilot.desktop.api:create_app"]
        argv += ["--port", str(port), "--workers", "1", "--log-level", "warning"]
        env = {"DESKTOP_DISPLAY": desk.display.name, "DESKTOP_JOURNAL": "false"}
        desk.display.spawn(argv, env=env, cwd=ROOT)
        off_url = f"http://127.0.0.1:{port}"
        wait_http(f"{off_url}/health")
        times: dict[tuple[str, bool], list[float]] = {
            (name, on): [] for name in ACTIONS for on in (True, False)
        }
        with (
            httpx.Client(base_url=desk.url, timeout=30) as on,
            httpx.Client(base_url=off_url, timeout=30) as off,
        ):
            for http in (on, off):  # warm both: connections, capture, keymap
                for body in ACTIONS.values():
                    timed(http, body)
            for i in range(args.rounds):
                for name, body in ACTIONS.items():
                    order = ((on, True), (off, False)) if i % 2 else ((off, False), (on, True))
                    for http, recording in order:
                        times[name, recording].append(timed(http, body))
                time.sleep(args.pause)
            page = on.get("/journal", params={"limit": 1}).json()
    kept = f"{page['latest']} entries, {page['frames']['count']} frames"
    print(f"{args.rounds} rounds, interleaved; the journal: {kept}")
    print(f"{'action':<22}{'on p50':>10}{'off p50':>10}{'added':>10}")
    for name in ACTIONS:
        with_, without = statistics.median(times[name, True]), statistics.median(times[name, False])
        print(f"{name:<22}{with_:>9.2f} {without:>9.2f} {with_ - without:>+9.2f} ms")
    print(f"Journal.record in process: {record_cost():.1f} µs per action")


if __name__ == "__main__":
    main()
