"""Sandbox benchmark: what a test pays for a real desktop with the client, the sandbox and the plugin.

  sandbox start -> ready, native (scripts/appliance.sh, all three /health green)   vs the same boot by the
                                                                                    tests' Appliance helper
  per-test reset (tasks cleared + POST /reset), with a terminal and files to clean  target <= 1 s
    and of an already clean desktop
  one screenshot through Desktop.screenshot() vs raw httpx (same request, same      target overhead <= 5 %
    body decoded), interleaved in the same run

From a wheel of a clean copy of this repository installed into a fresh venv outside it (as a team installs it,
testbed/wheel.py), in the same run:
  sandbox start -> ready from the installed package vs from this checkout        target <= the checkout's
  `pytest -n 2` on two tests (a sandbox per worker) vs `pytest` on one of them,   target <= 1.3x
    wall time from an empty folder; and the CPU each used (it and every process it waited for), with the
    least wall time the two tests' CPU allows on this machine's cores
each pair alternated, round after round.

With --image TAG, also the start of a sandbox from that image (needs a Docker engine).
Run: .venv/bin/python bench/sandbox.py [--n 60] [--resets 10] [--rounds 3] [--image TAG]  (as root);
--installed-only or --eval-only for one part.
Not a test.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
import orjson
import pybase64

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import deskpilot
from deskpilot.client import Sandbox
from deskpilot.scripted import Plan, ScriptedModel
from testbed import ROOT
from testbed.appliance import Appliance, model_settings
from testbed.wheel import TWO_TESTS, build_wheel, fresh_venv, outside_env

# a sandbox's start -> ready, printed by the interpreter it runs in
START = "import deskpilot\nwith deskpilot.sandbox() as box:\n    print(box.ready_seconds)"


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

    client_times: list[float] = []
    raw_times: list[float] = []
    for _ in range(5):
        box.desktop.screenshot(), by_hand()
    for i in range(n):
        for fn, out in ((box.desktop.screenshot, client_times), (by_hand, raw_times))[:: 1 if i % 2 else -1]:
            started = time.perf_counter()
            fn()
            out.append(time.perf_counter() - started)
    raw.close()
    return client_times, raw_times


def sandbox_start(python: Path, env: dict[str, str], cwd: Path) -> float:
    done = subprocess.run(
        [str(python), "-c", START], env=env, cwd=cwd, capture_output=True, text=True, check=True, timeout=300
    )
    return float(done.stdout.split()[-1])


def pytest_wall(venv: Path, project: Path, *args: str) -> tuple[float, float]:
    """Seconds of a whole pytest run in ``project`` (sandbox boots and teardowns included): wall, and the CPU
    it and every process it waited for used (user + system)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.monotonic()
    done = subprocess.run(
        [str(venv / "bin" / "python"), "-m", "pytest", "-q", "-p", "no:cacheprovider", *args],
        cwd=project, env=outside_env(venv), stdin=subprocess.DEVNULL, capture_output=True, text=True,
        timeout=600,
    )  # fmt: skip
    if done.returncode:
        raise RuntimeError(f"pytest {' '.join(args)} failed:\n{done.stdout[-6000:]}{done.stderr[-2000:]}")
    wall = time.monotonic() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime


def installed(rounds: int) -> None:
    """The figures of the package installed from its wheel, each against its baseline, alternated."""
    base = Path(tempfile.mkdtemp(prefix="deskpilot-bench-"))
    try:
        wheel = build_wheel(base / "dist")
        venv = fresh_venv(base / "venv", f"{wheel}[client,server]", "pytest", "pytest-xdist")
        project = base / "project"
        project.mkdir()
        (project / "test_two.py").write_text(TWO_TESTS)
        pythons = {
            "installed": (venv / "bin" / "python", outside_env(venv)),
            "checkout": (ROOT / ".venv" / "bin" / "python", {**os.environ, "PYTHONPATH": str(ROOT)}),
        }
        starts: dict[str, list[float]] = {"installed": [], "checkout": []}
        walls: dict[str, list[float]] = {"one": [], "two": []}
        cpus: dict[str, list[float]] = {"one": [], "two": []}
        for i in range(rounds):
            for name in ("installed", "checkout")[:: 1 if i % 2 else -1]:
                starts[name].append(sandbox_start(*pythons[name], project))
            for name in ("one", "two")[:: 1 if i % 2 else -1]:
                args = ("-k", "test_the_screen") if name == "one" else ("-n", "2")
                wall, cpu = pytest_wall(venv, project, *args)
                walls[name].append(wall)
                cpus[name].append(cpu)
    finally:
        shutil.rmtree(base, ignore_errors=True)
    mine, theirs = statistics.median(starts["installed"]), statistics.median(starts["checkout"])
    print(f"  sandbox start, installed package     {mine:.2f} s   (checkout {theirs:.2f} s, "
          f"ratio {mine / theirs:.2f}x, target <= 1; {rounds} each, alternated)")  # fmt: skip
    one, two = statistics.median(walls["one"]), statistics.median(walls["two"])
    print(f"  pytest -n 2, two tests               {two:.2f} s   (one test, no -n: {one:.2f} s, "
          f"ratio {two / one:.2f}x, target <= 1.3x)")  # fmt: skip
    # two runs on the machine's cores take at least their CPU time spread over all of them
    cores = os.cpu_count() or 1
    one_cpu, two_cpu = statistics.median(cpus["one"]), statistics.median(cpus["two"])
    print(f"    CPU: one test {one_cpu:.2f} s ({one_cpu / one:.2f} cores on average), two tests "
          f"{two_cpu:.2f} s: on {cores} cores no less than {two_cpu / cores:.2f} s, "
          f"{two_cpu / cores / one:.2f}x")  # fmt: skip


def eval_jobs(rounds: int) -> None:
    """``deskpilot eval evals/smoke`` wall time (sandboxes' start and stop included) with ``--jobs 1`` and
    ``--jobs 2``, alternated round after round, the agent on the scripted model's reference plan."""
    smoke = ROOT / "evals" / "smoke"
    walls: dict[int, list[float]] = {1: [], 2: []}
    with ScriptedModel().serve() as model, tempfile.TemporaryDirectory() as out:
        model.play([], plan=Plan.load(smoke / "plans" / "reference.yaml"))
        env = {**os.environ, **model_settings(model)}
        for _ in range(rounds):
            for jobs, times in walls.items():
                started = time.monotonic()
                argv = ["eval", str(smoke), "--jobs", str(jobs), "--out", f"{out}/{jobs}", "--json"]
                command = [sys.executable, "-m", "deskpilot.cli", *argv]
                done = subprocess.run(command, env=env, capture_output=True)
                times.append(time.monotonic() - started)
                assert done.returncode == 0, done.stderr.decode()[-2000:]
    one, two = statistics.median(walls[1]), statistics.median(walls[2])
    print(f"  deskpilot eval evals/smoke --jobs 1 {one:.1f} s   --jobs 2 {two:.1f} s, "
          f"ratio {two / one:.2f} (target <= 0.7; {rounds} rounds, medians)")  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=60, help="screenshots each way")
    ap.add_argument("--resets", type=int, default=10)
    ap.add_argument("--rounds", type=int, default=3, help="of the installed package's figures")
    ap.add_argument("--image", help="also start a sandbox from this image")
    ap.add_argument("--eval-rounds", type=int, default=3, help="of deskpilot eval --jobs 1 vs 2")
    ap.add_argument("--eval-only", action="store_true", help="only deskpilot eval --jobs 1 vs 2")
    ap.add_argument("--installed-only", action="store_true", help="only the installed package's figures")
    args = ap.parse_args()
    if args.eval_only:
        return eval_jobs(args.eval_rounds)
    if args.installed_only:
        return installed(args.rounds)

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
    installed(args.rounds)
    eval_jobs(args.eval_rounds)
    if args.image:
        started = time.monotonic()
        with deskpilot.sandbox(image=args.image, timeout=300):
            print(f"  image sandbox start -> ready        {time.monotonic() - started:.2f} s")


if __name__ == "__main__":
    main()
