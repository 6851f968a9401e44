"""The native sandbox's reaper (deskpilot/client/reaper.py) on real processes: the command's exit status
passes through, and a daemon the command left behind (double-forked, so adopted by the reaper) is ended and
listed."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from deskpilot.client import processes
from testbed.timing import wait_until


def reap(tmp_path: Path, script: str) -> tuple[int, list[str]]:
    leftovers = tmp_path / "leftovers"
    argv = [sys.executable, "-m", "deskpilot.client.reaper", "--linger", "1", str(leftovers), "--"]
    argv += ["sh", "-c", script]
    done = subprocess.run(argv, timeout=60)
    return done.returncode, leftovers.read_text().splitlines()


def test_the_commands_status_passes_through_and_nothing_is_left(tmp_path: Path) -> None:
    assert reap(tmp_path, "exit 3") == (3, [])


def test_a_daemon_the_command_left_is_adopted_ended_and_listed(tmp_path: Path) -> None:
    before = set(processes.descendants(1))
    code, left = reap(tmp_path, "(setsid sleep 300 &) ; exit 0")  # the sleep's parent exits at once
    assert code == 0
    assert len(left) == 1 and left[0].split(" ", 1)[1] == "sleep 300", left
    assert int(left[0].split()[0]) not in set(processes.descendants(1)) - before  # killed


def test_a_quick_stop_ends_the_tree_at_once_and_not_the_commands_slow_way(tmp_path: Path) -> None:
    """The command stands for supervisord: on SIGTERM it would take 20 s (its ordered stop); its program,
    a sleep, ends on SIGTERM. The reaper ends both within a second or two, and reports success."""
    leftovers = tmp_path / "leftovers"
    argv = [sys.executable, "-m", "deskpilot.client.reaper", "--quick-stop", str(leftovers), "--"]
    slow = (  # on SIGTERM: waits for its program, then 20 s more, as supervisord's loop would
        "import signal, subprocess, sys, time\n"
        "signal.signal(signal.SIGTERM, lambda *_: None)\n"
        "subprocess.run(['sleep', '300'])\n"
        "time.sleep(20)\n"
        "sys.exit(5)\n"
    )
    reaper = subprocess.Popen([*argv, sys.executable, "-c", slow])
    wait_until(lambda: len(processes.descendants(reaper.pid)) >= 2, 10, what="the command and its program")
    started = time.monotonic()
    reaper.send_signal(signal.SIGTERM)
    assert reaper.wait(15) == 0
    assert time.monotonic() - started < 3
    assert leftovers.read_text() == ""


def test_descendants_leave_out_the_trees_asked_and_alive_leaves_out_zombies() -> None:
    """What a test tells apart: programs another sandbox started meanwhile, and the ended ones not yet
    collected."""
    earlier = set(processes.descendants())  # the suite's own (a session's sandbox, which starts programs)
    other = subprocess.Popen(["sh", "-c", "sleep 30 & wait"], start_new_session=True)
    mine = subprocess.Popen(["sleep", "30"])
    try:
        wait_until(lambda: len(processes.descendants(other.pid)) == 1, 10, what="the other tree's program")
        assert processes.descendants(skip=earlier | {other.pid}) == [mine.pid]
        assert processes.alive(mine.pid)
        mine.kill()
        wait_until(lambda: not processes.alive(mine.pid), 10, what="a zombie")
        assert processes.descendants(skip=earlier | {other.pid}) == []
    finally:
        os.killpg(other.pid, signal.SIGKILL)
        mine.kill()
        other.wait()
        mine.wait()
    assert not processes.alive(mine.pid)
