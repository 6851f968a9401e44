"""Replay verdicts: does a recorded trajectory replay to a pass on a reset desktop, run after run (beside a
CPU load if asked), and does each real difference of the desktop fail it? On a private sandbox
(``deskpilot.sandbox()``, the scripted model), ``deskpilot.client.replay`` with its defaults:

  passes: the smoke suite (evals/smoke) run once with its reference plan, each task's trajectory saved
  (frames at rest: ``RECORDING``), then ``--runs`` replays in a row, cycling through the tasks, each on a
  reset desktop after the task's setup, with what differs from run to run by nature masked (``MASKS``: the
  PID a terminal prints for ``cmd &``, Geany's log times and scroll bar, Thunar's free space, Firefox's
  account badge)
  negative controls: a trajectory recorded on a prepared desktop, replayed on one that differs by one thing
  (a changed line of text in a terminal, a dialog open, a window moved 20 px, another file on the Desktop);
  each must fail

    .venv/bin/python bench/replay.py [--runs 50] [--load busy] [--timeout 5]

``--load busy`` runs two busy loops (one per core here) beside the replays, ended with them (at most 15 min).
A failing replay's frames are kept under a temporary folder the bench prints; the rest is removed.
"""

from __future__ import annotations

import argparse
import contextlib
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import deskpilot
from deskpilot.client import Sandbox
from deskpilot.client.compare import Box
from deskpilot.client.replay import replay
from deskpilot.computer.client import Desktop
from deskpilot.evaluation import load_suite, run_suite, runner
from deskpilot.evaluation.suite import EvalTask
from deskpilot.scripted import Plan, ScriptedModel
from testbed.appliance import model_settings
from testbed.replay_controls import (
    DESKTOP_STEPS,
    DIALOG,
    LINES,
    TERMINAL_STEPS,
    WINDOW,
    desk,
    record,
    terminal,
)

SMOKE = Path(__file__).resolve().parents[1] / "evals" / "smoke"
# what differs from run to run by nature, in screen pixels: what --mask is for
PID: Box = (0, 66, 150, 24)  # "[1] 12345" on the second line of a maximized terminal
GEANY_LOG: Box = (90, 896, 72, 50)  # the time stamps of Geany's status log, maximized
GEANY_LOG_WINDOWED: Box = (598, 688, 76, 46)  # the same, Geany opened from a terminal (not maximized)
# Geany's horizontal scroll bar, maximized: the length of its thumb varies from one start to the next
GEANY_SCROLLBAR: Box = (160, 880, 1750, 20)
ACCOUNT_BADGE: Box = (1820, 70, 24, 24)  # the dot Firefox may add to its account button, after a while
FREE_SPACE: Box = (890, 748, 170, 30)  # Thunar's status bar: the free space of the disk
MASKS: dict[str, tuple[Box, ...]] = {
    "code-editor-open": (PID, GEANY_LOG_WINDOWED),
    "file-manager": (PID, FREE_SPACE),
    "clipboard": (GEANY_LOG, GEANY_SCROLLBAR),
    "browser-local-page": (ACCOUNT_BADGE,),
}
# the references are recorded with frames at rest: the agent's own settle is tuned for speed and may catch an
# application mid-paint (Firefox before its start page), which no replay can show again
RECORDING = {"AGENT_SETTLE_QUIET_MS": "1000"}
LOAD_LIMIT = 900  # s: a busy loop ends by itself even if the bench is killed


def busy(kind: str | None) -> contextlib.AbstractContextManager[None]:
    return _busy() if kind == "busy" else contextlib.nullcontext()


@contextlib.contextmanager
def _busy() -> Iterator[None]:
    loop = f"import time\nend = time.monotonic() + {LOAD_LIMIT}\nwhile time.monotonic() < end: pass"
    loops = [subprocess.Popen([sys.executable, "-c", loop]) for _ in range(2)]
    try:
        yield
    finally:
        for p in loops:
            p.kill()
            p.wait()


def set_up(task: EvalTask, box: Sandbox) -> None:
    box.reset()
    runner.set_up(task, box)


@dataclass
class Passes:
    passed: Counter[str]
    compared: int = 0  # frames
    waited: int = 0  # of them, matched only after waiting
    seconds: list[float] = field(default_factory=list)  # each replay's
    diverged: dict[str, set[int]] = field(default_factory=dict)  # task -> the steps it diverged at


def smoke_passes(box: Sandbox, folder: Path, runs: int, timeout: float, kept: Path) -> Passes:
    """``runs`` replays of the suite's trajectories in ``folder``, round robin, each on a reset desktop."""
    tasks = load_suite(SMOKE)
    passes = Passes(Counter())
    for run in range(runs):
        task = tasks[run % len(tasks)]
        set_up(task, box)
        out = kept / f"run-{run + 1}-{task.id}"
        masks = MASKS.get(task.id, ())
        result = replay(folder / f"{task.id}.zip", box.desktop, out=out, timeout=timeout, masks=masks)
        passes.passed[task.id] += result.passed
        passes.compared += result.compared
        passes.waited += result.waited
        passes.seconds.append(result.seconds)
        if result.divergence:
            d = result.divergence
            passes.diverged.setdefault(task.id, set()).add(d.step)
            print(f"  run {run + 1} {task.id}: step {d.step} diverged ({d.tiles} tiles): {out}", flush=True)
    return passes


# the negative controls: a desktop to record on, and one to replay on that differs by one thing


@dataclass
class Control:
    name: str
    steps: list[dict[str, Any]]
    recorded_on: Callable[[Desktop], None]
    replayed_on: Callable[[Desktop], None]


CONTROLS = [
    Control(
        "a changed line of text in a terminal",
        TERMINAL_STEPS,
        terminal(LINES),
        terminal(LINES.replace("bravo", "delta")),
    ),
    Control(
        "a dialog open",
        DESKTOP_STEPS,
        desk("alpha.txt", WINDOW),
        desk("alpha.txt", WINDOW, (DIALOG, "Unexpected")),
    ),
    Control(
        "a window moved 20 px",
        DESKTOP_STEPS,
        desk("alpha.txt", WINDOW),
        desk("alpha.txt", WINDOW.replace("+600+300", "+620+300")),
    ),
    Control(
        "a different file listed on the Desktop",
        DESKTOP_STEPS,
        desk("alpha.txt", WINDOW),
        desk("bravo.txt", WINDOW),
    ),
]


def negatives(box: Sandbox, folder: Path, timeout: float) -> list[tuple[str, bool, str]]:
    """Each control recorded, then replayed on its changed desktop: (name, failed, where)."""
    results = []
    for n, control in enumerate(CONTROLS):
        box.reset()
        control.recorded_on(box.desktop)
        archive = folder / f"control-{n}.zip"
        archive.write_bytes(record(box.desktop, control.steps))
        box.reset()
        control.replayed_on(box.desktop)
        result = replay(archive, box.desktop, out=folder / f"control-{n}", timeout=timeout)
        d = result.divergence
        said = f"step {d.step}, {d.tiles} tiles at {d.where}" if d else "passed"
        results.append((control.name, d is not None, said))
    return results


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=50, help="replays of the smoke trajectories, round robin")
    ap.add_argument("--load", choices=["busy"], help="two busy loops beside the replays")
    ap.add_argument("--timeout", type=float, default=5.0, help="s a step's screen has to match")
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="deskpilot-bench-replay-"))
    started = time.monotonic()
    with (
        ScriptedModel().serve() as model,
        deskpilot.sandbox(settings=model_settings(model) | RECORDING) as box,
    ):
        model.play([], plan=Plan.load(SMOKE / "plans" / "reference.yaml"))
        recorded = run_suite("smoke", load_suite(SMOKE), box, None, save=work / "smoke")
        assert recorded.passed == len(recorded.results), "the reference plan must pass to record references"
        with busy(args.load):
            passes = smoke_passes(box, work / "smoke", args.runs, args.timeout, work / "diverged")
        controls = negatives(box, work, args.timeout)
    passed = sum(passes.passed.values())
    print(
        f"replay bench: {len(recorded.results)} smoke trajectories, {args.runs} replays on a reset desktop"
        f"{' beside two busy loops' if args.load else ''}, --timeout {args.timeout:g} s"
    )
    print(
        f"  passed {passed} of {args.runs}: "
        + ", ".join(f"{k} {v}" for k, v in sorted(passes.passed.items()))
    )
    print(
        f"  {passes.compared} frames compared, {passes.waited} matched only after waiting; a replay took"
        f" p50 {statistics.median(passes.seconds):.1f} s, at most {max(passes.seconds):.1f} s"
    )
    for task, steps in sorted(passes.diverged.items()):
        if passes.passed[task] == 0 and len(steps) == 1:  # the same step every time: look at the reference
            print(
                f"  every replay of {task} diverged at step {min(steps)}: does the desktop show its recorded"
            )
            print(f"  frame at rest at all? ({work / 'smoke' / task}.zip)")
    for name, failed, said in controls:
        print(f"  negative control, {name}: {'fails' if failed else 'PASSED (wrong)'} ({said})")
    print(f"  in {time.monotonic() - started:.0f} s")
    if passed < args.runs or not all(failed for _, failed, _ in controls):
        print(f"  kept for a look: {work} (trajectories, and the frames of each divergence)")
    else:
        shutil.rmtree(work)
    return 0 if all(failed for _, failed, _ in controls) else 1  # a control that passes is a broken replay


if __name__ == "__main__":
    sys.exit(main())
