"""The agent loop's own overhead per step, with a scripted model that answers instantly.

One step = build the context from the database, call the model (LiteLLM over loopback HTTP to the
scripted server), store its reply, run the tool on the real desktop service (Xvfb 1920x1080, static
screen), wait for the screen to settle, take the scaled screenshot, store the tool result.

Baseline, measured in the same run: the same loop with the reference product's fixed 750 ms sleep after
each action instead of settle detection.

    .venv/bin/python bench/agent_step.py [--steps 40] [--baseline-steps 8]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from app.agent.computer import Computer
from app.agent.runner import AgentExecutor
from app.config import AgentSettings, DesktopSettings
from app.desktop.api import create_app as desktop_app
from tests.fakes.llm_server import ScriptedLLM, Step
from tests.integration.agent_loop.harness import loop_settings, serve_agent
from tests.support.net import ServerThread
from tests.support.xvfb import start_window_manager, start_xvfb

TARGET_P50_MS = 150.0


class FixedSleepComputer(Computer):
    """The reference product's way: sleep 750 ms after every action, then one screenshot."""

    async def settled_screenshot(self) -> str:
        await asyncio.sleep(0.75)
        return await self.screenshot()


class FixedSleepExecutor(AgentExecutor):
    computer_class = FixedSleepComputer


def pct(values: list[float], p: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, max(0, round(p / 100 * (len(s) - 1))))]


def run(executor_cls: type[AgentExecutor], steps: int, desktop_url: str, llm: ScriptedLLM, tmp: Path) -> list:
    points = iter(range(10**6))
    # a different point each step (no loop breaker) in a corner of an otherwise static screen
    llm.play([], then=lambda _r: Step(calls=[("computer_move_mouse", {"coordinates": _pt(next(points))})]))
    settings: AgentSettings = loop_settings(
        tmp / f"{executor_cls.__name__}.db", desktop_url, llm.base_url, max_steps=steps + 1, repeat_limit=0
    )
    executor = executor_cls(settings)
    with serve_agent(settings, executor=executor) as agent:
        task = agent.create("benchmark: move the pointer around")
        agent.wait(task["id"], timeout=steps * 5 + 60)
    return executor.steps[1:]  # the first step warms up connections and imports


def _pt(i: int) -> dict[str, int]:
    return {"x": 5 + i % 40, "y": 5 + (i // 40) % 40}


def report(name: str, steps: list) -> float:
    total = [s.total * 1000 for s in steps]
    parts = {k: statistics.median(getattr(s, k) * 1000 for s in steps) for k in ("llm", "tools", "store")}
    print(
        f"{name:<28} n={len(total):3d}  p50 {pct(total, 50):7.1f} ms  p95 {pct(total, 95):7.1f} ms   "
        f"(median llm {parts['llm']:.1f}, tool+settle+screenshot {parts['tools']:.1f}, "
        f"db+context {parts['store']:.1f} ms)"
    )
    return pct(total, 50)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=40)
    ap.add_argument("--baseline-steps", type=int, default=8)
    args = ap.parse_args()
    display = start_xvfb()
    try:
        start_window_manager(display)
        with (
            tempfile.TemporaryDirectory() as tmp,
            ServerThread(desktop_app(DesktopSettings(display=display.name))) as desktop,
            ScriptedLLM().serve() as llm,
        ):
            ours = run(AgentExecutor, args.steps, desktop.url, llm, Path(tmp))
            base = run(FixedSleepExecutor, args.baseline_steps, desktop.url, llm, Path(tmp))
    finally:
        display.stop()
    print("agent step overhead, instant scripted model, static 1920x1080 screen, screenshots 1280x720")
    p50 = report("settle detection (ours)", ours)
    b50 = report("fixed 750 ms sleep (ref.)", base)
    print(
        f"ratio baseline/ours p50: {b50 / p50:.1f}x   target p50 <= {TARGET_P50_MS:.0f} ms: "
        f"{'met' if p50 <= TARGET_P50_MS else 'NOT met'}"
    )


if __name__ == "__main__":
    t = time.perf_counter()
    main()
    print(f"(bench took {time.perf_counter() - t:.0f} s)")
