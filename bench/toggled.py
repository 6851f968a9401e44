"""Metrics and traces switched off and on again inside one desktop service process: what they cost a request's
path, free of what sets two processes of the same code apart (their memory's layout), which in
``bench/tracing.py`` is as large as what is measured.

    .venv/bin/python bench/toggled.py [--rounds 40] [--n 100] [--processes 2]

Each process is the desktop service as the appliance runs it (uvicorn, one worker, the token required) with
metrics on and traces exporting to an OTLP/HTTP receiver in a process of its own; its app is made by ``app``
below, which switches both off on SIGUSR1 and on again on SIGUSR2: the controller's metric families, the
tracer provider and the span recorder set aside and put back (``GET /metrics`` and the span export carry on;
off, the route does not look for the ``traceparent`` either, as with traces off). Rounds
of ``--n`` requests per process and state, in a new random order each round; every request carries a
``traceparent``. Reported: the p50 with both on against both off (the median of the processes' own), the main
thread's CPU a request (schedstat), and the same added share paired round by round (``paired``): each
block's p50 against the other state's block of the same process and round, whose median over all pairs,
with a 95 % bootstrap interval, is free of the load's drift from one round to the next that moves a whole
run's p50 (on this machine more than what is measured). Not a test: figures vary with load.
"""

from __future__ import annotations

import argparse
import os
import random
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import httpx  # noqa: E402

from bench.served import CLICK, SCREENSHOT, TOKEN, Served  # noqa: E402

TRACEPARENT = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
STATES = ("on", "off")


def app() -> Any:
    """The desktop service's app, its instrumentation switched by signals (the driver's)."""
    from deskpilot import tracing
    from deskpilot.config import DesktopSettings
    from deskpilot.desktop import spans
    from deskpilot.desktop.api import create_app
    from deskpilot.desktop.controller import DesktopController

    controller = DesktopController(DesktopSettings())
    application = create_app(controller=controller)
    kept: dict[str, Any] = {}

    def off(*_: object) -> None:
        if not kept:
            kept.update(
                provider=tracing._provider, recorder=list(spans._recorder), metrics=controller.metrics
            )
            tracing._provider, controller.metrics = None, None
            spans._recorder.clear()

    def on(*_: object) -> None:
        if kept:
            tracing._provider, controller.metrics = kept["provider"], kept["metrics"]
            spans._recorder[:] = kept["recorder"]
            kept.clear()

    signal.signal(signal.SIGUSR1, off)
    signal.signal(signal.SIGUSR2, on)
    return application


def switch(served: Served, state: str) -> None:
    assert served.proc is not None
    os.kill(served.proc.pid, signal.SIGUSR2 if state == "on" else signal.SIGUSR1)
    time.sleep(0.02)  # the handler runs on the event loop's thread as soon as it wakes


Blocks = dict[tuple[int, str], list[float]]
BOOTSTRAP = 2000  # resamples of the rounds for the paired estimate's interval


def measure(
    group: list[Served], clients: list[httpx.Client], body: bytes, rounds: int, n: int
) -> tuple[Blocks, dict[tuple[int, str], int], Blocks]:
    """Each process's requests in each state (seconds), its main thread's CPU meanwhile (ns), and each
    round's block of requests, its p50 (seconds)."""
    samples: Blocks = {(i, s): [] for i in range(len(group)) for s in STATES}
    cpu = {(i, s): 0 for i in range(len(group)) for s in STATES}
    blocks: Blocks = {(i, s): [] for i in range(len(group)) for s in STATES}
    for v, c in zip(group, clients, strict=True):
        for state in STATES:  # warm-up, each state
            switch(v, state)
            for _ in range(100):
                assert c.post("/computer-use", content=body).status_code == 200
    for _ in range(rounds):
        for i, state in random.sample(list(samples), len(samples)):
            switch(group[i], state)
            before = group[i].cpu()[0]
            block = []
            for _ in range(n):
                t0 = time.perf_counter()
                clients[i].post("/computer-use", content=body)
                block.append(time.perf_counter() - t0)
            cpu[i, state] += group[i].cpu()[0] - before
            samples[i, state] += block
            blocks[i, state].append(statistics.median(block))
    return samples, cpu, blocks


def paired(blocks: Blocks, processes: int) -> tuple[float, float, float]:
    """What "on" adds, paired round by round: each process's on block against its off block of the same
    round (the machine's load drifts from one round to the next, much less within one), the median of those
    ratios over every round and process, in %, with a 95 % interval from resampling the pairs."""
    ratios = [
        on / off - 1
        for i in range(processes)
        for on, off in zip(blocks[i, "on"], blocks[i, "off"], strict=True)
    ]
    draw = random.Random(0)
    resampled = sorted(statistics.median(draw.choices(ratios, k=len(ratios))) for _ in range(BOOTSTRAP))
    low, high = resampled[int(BOOTSTRAP * 0.025)], resampled[int(BOOTSTRAP * 0.975) - 1]
    return statistics.median(ratios) * 100, low * 100, high * 100


def report(
    title: str, group: list[Served], samples: Blocks, cpu: dict[tuple[int, str], int], blocks: Blocks
) -> None:
    print(f"  {title}")
    processes = range(len(group))
    for i in processes:
        on, off = (statistics.median(samples[i, s]) * 1000 for s in STATES)
        print(f"    {group[i].name}: on {on:.3f} ms, off {off:.3f} ms ({(on / off - 1) * 100:+.2f} %)")
    p50 = {s: statistics.median(statistics.median(samples[i, s]) for i in processes) * 1000 for s in STATES}
    main = {s: statistics.median(cpu[i, s] / len(samples[i, s]) / 1000 for i in processes) for s in STATES}
    added = (p50["on"] / p50["off"] - 1) * 100
    print(
        f"    p50 on {p50['on']:.3f} ms, off {p50['off']:.3f} ms: added {added:+.2f} % "
        f"(target <= 2 %: {'ok' if added <= 2 else 'OVER'}); main thread's CPU a request on "
        f"{main['on']:.1f} µs, off {main['off']:.1f} µs ({main['on'] - main['off']:+.1f} µs)"
    )
    median, low, high = paired(blocks, len(group))
    verdict = "ok" if high <= 2 else "OVER" if low > 2 else "not shown either way"
    print(
        f"    paired by round ({len(blocks[0, 'on']) * len(group)} pairs of blocks): added {median:+.2f} %, "
        f"95 % interval {low:+.2f} to {high:+.2f} % (target <= 2 %: {verdict})"
    )


def main() -> None:
    from deskpilot.security import digest
    from testbed.groups import stop_group
    from testbed.net import free_port, wait_http
    from testbed.security import VARIABLES
    from testbed.xvfb import start_xvfb

    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rounds", type=int, default=40)
    parser.add_argument("--n", type=int, default=100, help="requests per process, state and round")
    parser.add_argument("--processes", type=int, default=2)
    args = parser.parse_args()
    own = ("OTEL_", "DESKTOP_", "AGENT_", "DESKPILOT_")
    base = {k: v for k, v in os.environ.items() if k.upper() not in VARIABLES and not k.startswith(own)}
    base["PYTHONHASHSEED"] = "0"
    display = start_xvfb()
    port = free_port()
    receiver = subprocess.Popen(
        [sys.executable, "-m", "testbed.otlp", str(port)], cwd=ROOT, start_new_session=True
    )
    wait_http(f"http://127.0.0.1:{port}/stats")
    env = {
        **base, "DESKTOP_DISPLAY": display.name, "DESKPILOT_TOKEN_SHA256": digest(TOKEN),
        "DESKPILOT_METRICS": "on", "OTEL_EXPORTER_OTLP_ENDPOINT": f"http://127.0.0.1:{port}",
    }  # fmt: skip
    group = [Served(f"process {i + 1}", "bench.toggled:app", env) for i in range(args.processes)]
    headers = {
        "Content-Type": "application/json",
        "traceparent": TRACEPARENT,
        "Authorization": f"Bearer {TOKEN}",
    }
    try:
        for v in group:
            v.start(access_log=False)
        print(
            f"Deskpilot toggled bench: {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.2f}; "
            f"{args.processes} desktop processes, both on and off in each, {args.rounds} rounds "
            f"of {args.n}"
        )
        clients = [httpx.Client(base_url=v.url, headers=headers, timeout=30) for v in group]
        for title, body, n in (
            ("click_mouse on an idle area", CLICK, args.n),
            ("screenshot", SCREENSHOT, args.n // 5),
        ):
            report(title, group, *measure(group, clients, body, args.rounds, max(1, n)))
        for c in clients:
            c.close()
    finally:
        for v in group:
            v.stop()
        stop_group(receiver)
        display.stop()


if __name__ == "__main__":
    main()
