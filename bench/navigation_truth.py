"""Thunar's navigation, over and over: is the frame of a folder typed into its location bar the folder?

Thunar sent to a large folder (``/usr/share/doc``) waits, between two steps of its answer, for the X
server's replies and for synchronous D-Bus calls with every thread asleep: the case where a settle once took
a program waiting for a reply for one at rest (tests/e2e/test_truth.py's ``test_navigating_in_thunar``, the
same steps, failed about one time in ten). Each run resets the desktop, launches Thunar, opens its location
bar (ctrl+l, keys down then up) and types the folder and Enter with the fields the agent sends; the answered
frame is judged against the screen once it has held for 1.5 s (the panel clock masked, identical pixels).
It prints the untrue frames and ``settledMs`` p50 / p95.

    .venv/bin/python bench/navigation_truth.py --runs 20                     # ~2 minutes, as root
    .venv/bin/python bench/navigation_truth.py --runs 20 --load busy         # beside two busy loops
    mkdir /tmp/before && git archive <commit> | tar -x -C /tmp/before && ln -s $PWD/.venv /tmp/before/.venv
    .venv/bin/python bench/navigation_truth.py --runs 20 --checkout /tmp/before   # the same, older code

Not a test: how often the old code was wrong depends on the machine's timing.
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

ROOT = Path(__file__).resolve().parents[1]
pre = argparse.ArgumentParser(add_help=False)
pre.add_argument("--checkout", type=Path, default=ROOT)
CHECKOUT = pre.parse_known_args()[0].checkout.resolve()
sys.path.insert(0, str(CHECKOUT))  # its deskpilot and testbed: the sandbox runs from it

from deskpilot.agent.computer import Computer  # noqa: E402
from deskpilot.computer.client import Desktop  # noqa: E402
from deskpilot.config import AgentSettings  # noqa: E402
from testbed.appliance import Appliance, agent_secrets  # noqa: E402

# the truth bench's judge, beside this script (mypy, run from the repo, knows it as bench.truth)
if TYPE_CHECKING:
    from bench.truth import diff
else:
    from truth import diff

AGENT: dict[str, Any] = Computer(None, AgentSettings()).observe  # type: ignore[arg-type]  # only its fields
WIDTH = AGENT["screenshot"]["width"]
REST_S = 1.5  # the screen has rested once its frame stayed the same this long (as the e2e truth tests judge)

FOLDER = "/usr/share/doc\n"
BUSY_S = 3600


@contextlib.contextmanager
def load(kind: str) -> Iterator[None]:
    """Nothing, or two busy loops (bounded in time, should the bench die before it stops them)."""
    spin = f"import time\nend = time.monotonic() + {BUSY_S}\nwhile time.monotonic() < end: pass"
    loops = [subprocess.Popen([sys.executable, "-c", spin]) for _ in range(2 if kind == "busy" else 0)]
    try:
        yield
    finally:
        for p in loops:
            p.kill()
            p.wait()


def rested(desktop: Desktop, timeout: float = 20) -> str:
    """The screen once its frame has stayed the same for ``REST_S``."""
    last, since = "", time.monotonic()
    while time.monotonic() - since < timeout:
        frame = str(desktop.action("screenshot", width=WIDTH)["data"]["image"])
        if frame != last:
            last, since = frame, time.monotonic()
        elif time.monotonic() - since >= REST_S:
            return frame
        time.sleep(0.1)
    raise RuntimeError(f"the screen did not rest for {REST_S} s within {timeout} s")


def run(desktop: Desktop) -> tuple[bool, dict[str, Any], str]:
    """One navigation: whether its frame was the screen at rest, what the answer said, where they differ."""
    desktop.reset()
    desktop.action("application", application="directory", settle={})
    for press in ("down", "up"):
        desktop.action("press_keys", keys=["ctrl", "l"], press=press, settle={})
    rested(desktop)
    body = desktop.action("type_text", text=FOLDER, **AGENT)
    n, box = diff(body["data"]["image"], rested(desktop))
    said = {k: body.get(k) for k in ("settled", "settledMs", "drawn")}
    return n == 0, said, f"{n} pixels differ in {box}" if n else ""


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0], parents=[pre])
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--load", choices=["idle", "busy"], default="idle")
    args = ap.parse_args()
    print(f"Thunar navigation to {FOLDER.strip()}: {args.runs} runs, {args.load}; sandbox from {CHECKOUT}")
    untrue, settled_ms = 0, []
    with load(args.load):
        appliance = Appliance(checkout=CHECKOUT, settings=agent_secrets()).start()
        try:
            appliance.wait_ready()
            with Desktop(appliance.desktop_url, appliance.token) as desktop:
                for i in range(args.runs):
                    true, said, where = run(desktop)
                    untrue += not true
                    settled_ms.append(float(said["settledMs"]))
                    print(f"  {i:3d} {'true  ' if true else 'UNTRUE'} {said} {where}", flush=True)
        finally:
            appliance.stop()
            appliance.cleanup()
    p95 = statistics.quantiles(settled_ms, n=20)[-1] if len(settled_ms) > 1 else settled_ms[0]
    print(
        f"untrue frames: {untrue} of {args.runs}; settledMs p50 {statistics.median(settled_ms):.0f} ms, "
        f"p95 {p95:.0f} ms"
    )


if __name__ == "__main__":
    t = time.perf_counter()
    main()
    print(f"(bench took {time.perf_counter() - t:.0f} s)")
