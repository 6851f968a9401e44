"""Thunar's navigation, over and over: is the frame of a folder typed into its location bar the folder?

Thunar sent to a large folder (``/usr/share/doc``) waits, between two steps of its answer, for the X
server's replies and for synchronous D-Bus calls with every thread asleep: the case where a settle once took
a program waiting for a reply for one at rest (tests/e2e/test_truth.py's ``test_navigating_in_thunar``, the
same steps, failed now and then in CI; 3 of 40 runs of this bench beside two busy loops). Each run resets
the desktop, launches Thunar, opens its location bar (ctrl+l, keys down then up) and types the folder and
Enter with the fields the agent sends; the answered frame is judged against the screen once it has held for
1.5 s (the panel clock masked, identical pixels). It prints the untrue frames and ``settledMs`` p50 / p95.
Loads as bench/truth.py's (idle, busy, tests).

    .venv/bin/python bench/navigation_truth.py --runs 20                     # ~1.5 minutes, as root
    .venv/bin/python bench/navigation_truth.py --runs 40 --load busy         # beside two busy loops
    mkdir /tmp/before && git archive <commit> | tar -x -C /tmp/before
    .venv/bin/python bench/navigation_truth.py --runs 40 --load busy --checkout /tmp/before   # older code

``--checkout DIR`` runs the sandbox (its services) from that checkout, with this checkout's venv and client.
Not a test: how often the old code was wrong depends on the machine's load and timing.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # testbed, and this checkout's client

from deskpilot.agent.computer import Computer  # noqa: E402
from deskpilot.computer.client import Desktop  # noqa: E402
from deskpilot.config import AgentSettings  # noqa: E402
from testbed.appliance import Appliance, agent_secrets  # noqa: E402
from testbed.rest import rested  # noqa: E402

# the truth bench's judge and loads, beside this script (mypy, run from the repo, knows it as bench.truth);
# imported last: it puts its --checkout first on sys.path, and this script's client is this checkout's
if TYPE_CHECKING:
    from bench.truth import LOADS, diff
else:
    from truth import LOADS, diff

AGENT: dict[str, Any] = Computer(None, AgentSettings()).observe  # type: ignore[arg-type]  # only its fields
WIDTH = AGENT["screenshot"]["width"]

FOLDER = "/usr/share/doc\n"
LOAD_S = 3600  # the bound of the load the bench starts, should it be left behind


def run(desktop: Desktop) -> tuple[bool, dict[str, Any], str]:
    """One navigation: whether its frame was the screen at rest, what the answer said, where they differ."""
    desktop.reset()
    desktop.action("application", application="directory", settle={})
    for press in ("down", "up"):
        desktop.action("press_keys", keys=["ctrl", "l"], press=press, settle={})
    rested(desktop, WIDTH)
    body = desktop.action("type_text", text=FOLDER, **AGENT)
    n, box = diff(body["data"]["image"], rested(desktop, WIDTH))
    said = {k: body.get(k) for k in ("settled", "settledMs", "drawn")}
    return n == 0, said, f"{n} pixels differ in {box}" if n else ""


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    ap.add_argument("--checkout", type=Path, default=ROOT, help="the checkout the sandbox runs from")
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--load", choices=list(LOADS), default="idle")
    args = ap.parse_args()
    checkout = args.checkout.resolve()
    print(f"Thunar navigation to {FOLDER.strip()}: {args.runs} runs, {args.load}; sandbox from {checkout}")
    untrue, settled_ms = 0, []
    with LOADS[args.load](LOAD_S):
        appliance = Appliance(checkout=checkout, settings=agent_secrets()).start()
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
