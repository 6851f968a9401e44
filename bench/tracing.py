"""What OpenTelemetry traces (deskpilot/tracing.py) cost, alone and with the Prometheus metrics.

    .venv/bin/python bench/tracing.py [--rounds 30] [--n 100] [--processes 4] [--sdk-loaded] [--instructions]

Each service runs side by side as in production (its own uvicorn process, one worker, the token required),
``--processes`` processes each way:

  off              DESKPILOT_METRICS=off, no OTEL_EXPORTER_OTLP_ENDPOINT: no instrumentation at all
  metrics          the default: metrics on, traces off (the SDK not even imported)
  metrics+traces   both on, exporting to an OTLP/HTTP receiver in a process of its own on loopback
                   (testbed/otlp.py, which decodes every batch as a collector would)
  metrics+sdk      with --sdk-loaded: metrics on, traces off, the SDK and its exporter imported all the same
                   (bench/sdk_loaded.py): what carrying them costs a process

Each way's p50 is the median of its processes' p50s: one process differs from another of the same code by
about as much as is measured (its memory's layout, its database file), so one process a way measures the
process more than the way; the spread of each way's processes shows by how much in the same run. All get the
same requests, with a ``traceparent`` as the agent and the UI send it, in rounds of ``--n`` per process
interleaved in a new random order each round, so that load from elsewhere falls on all alike; every process
has the same hash seed and no address-space randomisation (its memory laid out as every other's), the task
services' SQLite files are on tmpfs. Besides the latency, the CPU time each process spent while its own
requests were timed, read from the scheduler's accounting (``/proc/<pid>/task/<tid>/schedstat``, in ns): its
main thread's, where a request's path runs (the event loop), is what traces add to that path with less of the
machine's noise (processes still differ by a few percent); all its threads' adds the work beside it:

  POST /computer-use click_mouse on an idle area (no settle), and screenshot (an unchanged screen: a fifth as
      many), on the desktop service (traces: the caller's context, a ``desktop.perform`` span)
                                                                               target: <= 2 % on the p50
  POST /tasks on the task service (traces: the caller's context; half as many)  target: <= 1 % on the p50

It also times a span alone, in this process: the API's no-op one and the SDK's. Not a test: figures vary
with load.

``--instructions`` counts instead of timing: one process a way under Valgrind's callgrind
(bench/instructions.py), the instructions each kind of request costs its main thread (the verdict: what a
way adds to the request's path, as a share of the base's) and all its threads (with the spans' export).
Counts repeat within ~0.1 % from one process to another, so the same change reads the same every run; but
an instruction is not a fixed time (the span's Python runs ~3x more instructions a microsecond in a loop than
a whole request does, and fewer when a request touches it once), so a share of instructions is not a share
of the p50 (bench/toggled.py measures that within the same processes).
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import httpx  # noqa: E402

from bench import instructions  # noqa: E402
from bench.served import CLICK, SCREENSHOT, TOKEN, Served, interleave  # noqa: E402
from deskpilot.security import digest  # noqa: E402
from testbed.groups import stop_group  # noqa: E402
from testbed.net import free_port, wait_http  # noqa: E402
from testbed.security import VARIABLES  # noqa: E402
from testbed.xvfb import start_xvfb  # noqa: E402

TRACEPARENT = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
TASK = b'{"description": "a task of the tracing bench"}'
WAYS = ("off", "metrics", "metrics+traces")
SDK_LOADED = "metrics+sdk"  # metrics, no traces, the SDK and its exporter imported (--sdk-loaded)
# what each comparison adds: (what, the way with it, the way without)
COMPARED = (
    ("traces", "metrics+traces", "metrics"),
    ("metrics and traces", "metrics+traces", "off"),
    ("the SDK loaded, no traces", SDK_LOADED, "metrics"),
)


def variants(
    factory: str, env: dict[str, str], endpoint: str, processes: int, ways: tuple[str, ...] = WAYS
) -> list[Served]:
    """``processes`` processes each way."""
    environ = {
        "off": {"DESKPILOT_METRICS": "off"},
        "metrics": {"DESKPILOT_METRICS": "on"},
        "metrics+traces": {"DESKPILOT_METRICS": "on", "OTEL_EXPORTER_OTLP_ENDPOINT": endpoint},
        SDK_LOADED: {"DESKPILOT_METRICS": "on", "BENCH_FACTORY": factory},
    }
    return [
        Served(way, "bench.sdk_loaded:app" if way == SDK_LOADED else factory, {**env, **environ[way]})
        for way in ways
        for _ in range(processes)
    ]


def measure(group: list[Served], path: str, body: bytes, status: int, rounds: int, n: int) -> None:
    headers = {
        "Content-Type": "application/json",
        "traceparent": TRACEPARENT,
        "Authorization": f"Bearer {TOKEN}",
    }
    clients = [httpx.Client(base_url=v.url, headers=headers, timeout=30) for v in group]
    try:
        for v, c in zip(group, clients, strict=True):  # warm-up, and a check that all answer alike
            for _ in range(100):
                r = c.post(path, content=body)
            assert r.status_code == status, (v.name, r.status_code, r.text)
            v.clear()
        interleave(list(zip(group, clients, strict=True)), "POST", path, body, rounds, n)
    finally:
        for c in clients:
            c.close()


def ms(samples: list[float], q: float = 0.5) -> float:
    return (
        statistics.median(samples) * 1000 if q == 0.5 else sorted(samples)[int(q * (len(samples) - 1))] * 1000
    )


def verdict(share: float, target: float) -> str:
    return f"target <= {target:g} %: " + ("ok" if share <= target else "OVER")


def report(title: str, group: list[Served], target: float) -> None:
    print(f"  {title}")
    p50, spread = {}, 0.0
    ways = [way for way in (*WAYS, SDK_LOADED) if any(v.name == way for v in group)]
    compared = [c for c in COMPARED if c[1] in ways]
    for way in ways:
        processes = [v for v in group if v.name == way]
        pooled = [s for v in processes for s in v.samples]
        each = [ms(v.samples) for v in processes]
        p50[way] = statistics.median(each)
        spread = max(spread, (max(each) - min(each)) / p50[way] * 100)
        print(
            f"    {way:<15} p50 {p50[way]:7.3f} ms   p95 {ms(pooled, 0.95):7.3f} ms   "
            f"({len(pooled)} requests; its processes {', '.join(f'{e:.3f}' for e in each)})"
        )
    for what, way, base in compared:
        added = p50[way] - p50[base]
        share = added / p50[base] * 100
        print(f"    added by {what}: {added:+7.3f} ms = {share:+5.2f} %   ({verdict(share, target)})")
    print(f"    the processes of one way apart by up to {spread:.2f} %")
    # the CPU a request costs its process, read from the scheduler: what a latency's p50 only shows through
    # the noise of the machine and of one process against another
    cpu: dict[str, dict[str, float]] = {}
    for way in ways:
        processes = [v for v in group if v.name == way]
        main = [v.cpu_main / len(v.samples) / 1000 for v in processes]
        every = [v.cpu_all / len(v.samples) / 1000 for v in processes]
        cpu[way] = {"main": statistics.median(main), "all": statistics.median(every)}
        print(
            f"    {way:<15} CPU a request: main thread {cpu[way]['main']:6.1f} µs, all threads "
            f"{cpu[way]['all']:6.1f} µs   (its processes {', '.join(f'{m:.1f}' for m in main)} µs)"
        )
    for what, way, base in compared:
        on_path = cpu[way]["main"] - cpu[base]["main"]
        overall = cpu[way]["all"] - cpu[base]["all"]
        share = on_path / 1000 / p50[base] * 100
        print(
            f"    CPU added by {what}: main thread {on_path:+6.1f} µs = {share:+5.2f} % of the p50 "
            f"({verdict(share, target)}); all threads {overall:+6.1f} µs"
        )
    sys.stdout.flush()


def count_instructions(desktop: list[Served], tasks: list[Served], directory: Path) -> None:
    """``--instructions``: one process a way under callgrind (bench/instructions.py); the instructions each
    kind of request costs, and what each comparison adds, as a share of its base's."""
    headers = {
        "Content-Type": "application/json",
        "traceparent": TRACEPARENT,
        "Authorization": f"Bearer {TOKEN}",
    }
    kinds = (
        ("click_mouse on an idle area (no settle)", desktop, "/computer-use", CLICK, 300, 2),
        ("screenshot (unchanged screen)", desktop, "/computer-use", SCREENSHOT, 100, 2),
        ("POST /tasks (SQLite on tmpfs, no worker)", tasks, "/tasks", TASK, 150, 1),
    )
    for group in (desktop, tasks):
        counted = {v.name: instructions.Counted(v, directory) for v in group}
        for v in group:
            v.start(access_log=False, wait_s=600, wrapper=counted[v.name].wrapper())
        try:
            for title, of, path, body, n, target in kinds:
                if of is not group:
                    continue
                counts = {}
                for way, c in counted.items():
                    with httpx.Client(base_url=c.served.url, headers=headers, timeout=120) as client:
                        for _ in range(50):  # warm-up, uncounted
                            r = client.post(path, content=body)
                        assert r.status_code in (200, 201), (way, r.status_code, r.text)
                        counts[way] = c.count(functools.partial(client.post, path, content=body), n)
                print(f"  {title}: instructions a request ({n} counted a way)")
                for way, k in counts.items():
                    print(f"    {way:<15} main thread {k.main:12,.0f}   all threads {k.every:12,.0f}")
                for what, way, base in COMPARED:
                    if way in counts and base in counts:
                        added = counts[way] - counts[base]
                        share = added.main / counts[base].main * 100  # the request's path
                        print(
                            f"    added by {what}: main thread {added.main:+10,.0f} = {share:+5.2f} % "
                            f"({verdict(share, target)}); all threads {added.every:+10,.0f} = "
                            f"{added.every / counts[base].every * 100:+5.2f} %"
                        )
                sys.stdout.flush()
        finally:
            for v in group:
                v.stop()


def span_cost() -> None:
    """A span with two attributes, entered and left, in this process: the API's no-op one (traces off) and
    the SDK's with a batch processor whose exporter drops everything (traces on, without the export)."""
    from opentelemetry import trace
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult

    class Drop(SpanExporter):
        def export(self, spans: object) -> SpanExportResult:
            return SpanExportResult.SUCCESS

    provider = TracerProvider()
    provider.add_span_processor(BatchSpanProcessor(Drop()))
    for name, tracer in (("no-op (off)", trace.get_tracer("bench")), ("SDK (on)", provider.get_tracer("b"))):
        n = 100_000
        t0 = time.perf_counter()
        for _ in range(n):
            with tracer.start_as_current_span("desktop.perform", attributes={"deskpilot.action": "c"}) as s:
                s.set_attribute("deskpilot.outcome", "ok")
        print(f"  a span alone, {name}: {(time.perf_counter() - t0) / n * 1e6:.2f} µs")
    provider.shutdown()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--n", type=int, default=100, help="requests per process per round")
    parser.add_argument("--processes", type=int, default=4, help="of each service, each way")
    parser.add_argument(
        "--sdk-loaded", action="store_true", help=f"a fourth way, {SDK_LOADED}: the SDK imported, traces off"
    )
    parser.add_argument(
        "--instructions", action="store_true", help="count instructions under Valgrind instead of timing"
    )
    args = parser.parse_args()
    own = ("OTEL_", "DESKTOP_", "AGENT_", "DESKPILOT_METRICS")
    base = {k: v for k, v in os.environ.items() if k.upper() not in VARIABLES and not k.startswith(own)}
    base["PYTHONHASHSEED"] = "0"  # one hash seed for every process: dict and set layouts alike in all

    display = start_xvfb()
    # the task services' SQLite files in memory where there is a tmpfs: a disk's fsync latency, which varies
    # from one write to the next, would drown a comparison of a percent
    shm = "/dev/shm" if os.path.isdir("/dev/shm") else None
    state = tempfile.TemporaryDirectory(prefix="deskpilot-bench-tracing-", dir=shm)
    port = free_port()
    receiver = subprocess.Popen(
        [sys.executable, "-m", "testbed.otlp", str(port)], cwd=ROOT, start_new_session=True
    )
    endpoint = f"http://127.0.0.1:{port}"
    wait_http(f"{endpoint}/stats")
    desktop_env = {**base, "DESKTOP_DISPLAY": display.name, "DESKPILOT_TOKEN_SHA256": digest(TOKEN)}
    ways = (*WAYS, SDK_LOADED) if args.sdk_loaded else WAYS
    processes = 1 if args.instructions else args.processes  # counts do not vary as times do
    desktop = variants("deskpilot.desktop.api:create_app", desktop_env, endpoint, processes, ways)
    task_env = {
        **base, "DESKPILOT_TOKEN": TOKEN, "TASKS_WORKER_ENABLED": "false",
        "TASKS_DESKTOP_FILES_DIR": "/nonexistent/deskpilot-bench/Desktop",
    }  # fmt: skip
    tasks = [
        Served(v.name, v.factory, {**v.env, "TASKS_DATABASE_URL": f"sqlite:///{state.name}/{i}.db"})
        for i, v in enumerate(variants("deskpilot.tasks.app:create_app", task_env, endpoint, processes, ways))
    ]
    try:
        if args.instructions:
            count_instructions(desktop, tasks, Path(state.name))
            return
        for v in [*desktop, *tasks]:
            v.start(access_log=False)
        print(
            f"Deskpilot tracing bench: {os.cpu_count()} CPUs; {args.rounds} interleaved rounds of {args.n} "
            "requests per process, keep-alive; the receiver in its own process"
        )
        measure(desktop, "/computer-use", CLICK, 200, args.rounds, args.n)
        report("click_mouse on an idle area (no settle), desktop service", desktop, 2)
        measure(desktop, "/computer-use", SCREENSHOT, 200, args.rounds, max(1, args.n // 5))
        report("screenshot (unchanged screen), desktop service", desktop, 2)
        measure(tasks, "/tasks", TASK, 201, args.rounds, max(1, args.n // 2))
        report("POST /tasks, task service (SQLite on tmpfs, no worker)", tasks, 1)
        span_cost()
    finally:
        for v in [*desktop, *tasks]:
            v.stop()
        stats = json.loads(httpx.get(f"{endpoint}/stats").text)
        print(f"  the receiver got {stats['spans']} spans in {stats['requests']} requests")
        stop_group(receiver)
        display.stop()
        state.cleanup()


if __name__ == "__main__":
    main()
