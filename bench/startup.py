"""Startup time and idle memory of the whole appliance, with same-run baselines.

Figures:
  boot      seconds from starting scripts/appliance.sh (which execs supervisord) until all three /health
            answer 200; median of N boots. Target <= 10 s.
  memory    resident memory of every process of the appliance after 5 s idle, no apps open: the sum of
            RSS (counts shared pages once per process, pessimistic) and of PSS (shares them out).
            Target <= 600 MiB.
Baselines, measured in the same run on the same machine:
  sequential  the same programs started one after another, each waited for before the next (what a naive
              start script does); the ratio shows what supervisord's parallel start buys.
  xvfb        Xvfb alone: its time to accept connections and its RSS, the floor any desktop appliance pays.

  .venv/bin/python bench/startup.py [--boots N]
"""

from __future__ import annotations

import argparse
import functools
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
import psutil

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from testbed import ROOT
from testbed.appliance import Appliance, free_display
from testbed.net import free_port

MiB = 1024 * 1024


def tree_memory(procs: list[psutil.Process]) -> tuple[float, float, list[tuple[float, float, str]]]:
    """Summed RSS and PSS in MiB, and (rss, pss, name) per process."""
    rows = []
    for p in procs:
        try:
            info = p.memory_full_info()
            name = " ".join(p.cmdline()[:3])
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
        rows.append((info.rss / MiB, getattr(info, "pss", info.rss) / MiB, name))
    return sum(r[0] for r in rows), sum(r[1] for r in rows), rows


def boot_once() -> tuple[float, float, float, list[tuple[float, float, str]]]:
    a = Appliance().start()
    try:
        seconds = a.wait_ready()
        time.sleep(5)
        rss, pss, rows = tree_memory(a.processes())
        return seconds, rss, pss, rows
    finally:
        leftovers = a.stop()
        a.cleanup()
        if leftovers:
            print(f"  warning: left behind: {leftovers}")


def _wait(check, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise TimeoutError("baseline step did not come up")
        time.sleep(0.02)


def _x_answers(display: str) -> bool:
    return subprocess.run(["xset", "-display", display, "q"], capture_output=True).returncode == 0


def _port_open(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
        return True
    except OSError:
        return False


def _healthy(port: int) -> bool:
    try:
        return httpx.get(f"http://127.0.0.1:{port}/health", timeout=1).status_code == 200
    except httpx.HTTPError:
        return False


def sequential_boot() -> float:
    """The same programs, as the same user, started one by one, each waited for before the next."""
    base = Path(tempfile.mkdtemp(prefix="deskpilot-bench-"))
    base.chmod(0o755)
    display, vnc = free_display(), free_port()
    ports = [free_port() for _ in range(3)]
    home, run = base / "home", base / "run"
    home.mkdir()
    run.mkdir(mode=0o700)
    shutil.chown(home, "user", "user")
    shutil.chown(run, "user", "user")
    bus = run / "bus"
    env = {
        **os.environ,
        "DISPLAY": display,
        "HOME": str(home),
        "USER": "user",
        "LOGNAME": "user",
        "XDG_RUNTIME_DIR": str(run),
        "DBUS_SESSION_BUS_ADDRESS": f"unix:path={bus}",
        "NO_AT_BRIDGE": "1",
        "DESKTOP_VNC_PORT": str(vnc),
        # a database of its own: the appliance's state directory is the system user's alone
        "DATABASE_URL": f"sqlite+aiosqlite:///{run}/tasks.db",
    }
    venv = ROOT / ".venv" / "bin"
    steps = [
        (["dbus-daemon", "--session", "--nofork", "--nopidfile", f"--address=unix:path={bus}"], bus.exists),
        (
            ["Xvfb", display, "-screen", "0", "1920x1080x24", "-nolisten", "tcp", "-noreset"],
            lambda: _x_answers(display),
        ),
        (["xfwm4", "--compositor=off", "--sm-client-disable"], lambda: True),
        (["xfdesktop", "--disable-wm-check", "--sm-client-disable"], lambda: True),
        (["xfce4-panel", "--disable-wm-check", "--sm-client-disable"], lambda: True),
        (
            [
                "x11vnc",
                "-display",
                display,
                "-localhost",
                "-rfbport",
                str(vnc),
                "-forever",
                "-shared",
                "-nopw",
                "-quiet",
            ],
            lambda: _port_open(vnc),
        ),
    ]
    factories = (
        "deskpilot.desktop.api:create_app",
        "deskpilot.tasks.app:create_app",
        "deskpilot.ui.server:create_app",
    )
    for factory, port in zip(factories, ports, strict=True):
        steps.append(
            (
                [str(venv / "uvicorn"), "--factory", factory, "--port", str(port)],
                functools.partial(_healthy, port),
            )
        )
    procs: list[subprocess.Popen] = []
    start = time.monotonic()
    try:
        for argv, ready in steps:
            procs.append(
                subprocess.Popen(
                    ["runuser", "-u", "user", "--", *argv],
                    env=env,
                    cwd=ROOT,
                    start_new_session=True,
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                )
            )
            _wait(ready)
        return time.monotonic() - start
    finally:
        for p in reversed(procs):
            os.killpg(p.pid, signal.SIGTERM)
            p.wait(10)
        shutil.rmtree(base, ignore_errors=True)


def xvfb_alone() -> tuple[float, float]:
    display = free_display()
    start = time.monotonic()
    proc = subprocess.Popen(
        ["Xvfb", display, "-screen", "0", "1920x1080x24", "-nolisten", "tcp", "-noreset"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        _wait(lambda: _x_answers(display))
        seconds = time.monotonic() - start
        time.sleep(2)
        return seconds, psutil.Process(proc.pid).memory_info().rss / MiB
    finally:
        proc.terminate()
        proc.wait(10)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--boots", type=int, default=3)
    args = parser.parse_args()

    boots = [boot_once() for _ in range(args.boots)]
    seq = [sequential_boot() for _ in range(args.boots)]
    xvfb_s, xvfb_rss = xvfb_alone()

    boot_s = statistics.median(b[0] for b in boots)
    rss = statistics.median(b[1] for b in boots)
    pss = statistics.median(b[2] for b in boots)
    rows = boots[-1][3]
    seq_s = statistics.median(seq)
    print(
        f"appliance boot to 3x /health green: {boot_s:.2f} s median of {args.boots} "
        f"({', '.join(f'{b[0]:.2f}' for b in boots)}); target <= 10 s"
    )
    print(
        f"  baseline, sequential start of the same programs: {seq_s:.2f} s "
        f"({', '.join(f'{s:.2f}' for s in seq)}); ratio {boot_s / seq_s:.2f}x"
    )
    print(f"  baseline, Xvfb alone accepting connections: {xvfb_s:.2f} s")
    print(
        f"appliance idle memory, {len(rows)} processes, no apps: RSS {rss:.0f} MiB, PSS {pss:.0f} MiB; "
        "target <= 600 MiB"
    )
    for r, p, name in sorted(rows, reverse=True):
        print(f"  {r:6.1f} MiB RSS {p:6.1f} MiB PSS  {name[:110]}")
    print(f"  baseline, Xvfb alone: RSS {xvfb_rss:.0f} MiB; ratio {rss / xvfb_rss:.1f}x (RSS)")


if __name__ == "__main__":
    main()
