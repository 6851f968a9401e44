"""Whether the programs behind a window are at work (desktop/activity.py), read from the real /proc of a real
shell on a pseudo-terminal, as xfce4-terminal runs one."""

from __future__ import annotations

import fcntl
import os
import pty
import subprocess
import sys
import termios
from collections.abc import Iterator

import pytest

from deskpilot.desktop import activity
from testbed.timing import wait_until


@pytest.fixture
def shell() -> Iterator[tuple[int, int]]:
    """An interactive bash on a pty, as a terminal runs it: (its pid, the pty's master end)."""
    master, slave = pty.openpty()
    env = {**os.environ, "PS1": "$ ", "TERM": "xterm", "LESS": ""}
    proc = subprocess.Popen(
        ["bash", "--norc", "--noprofile", "-i"],
        stdin=slave,
        stdout=slave,
        stderr=slave,
        env=env,
        start_new_session=True,
        preexec_fn=_take_the_terminal,
    )
    os.close(slave)
    try:
        wait_until(lambda: activity.jobs(activity.tree(proc.pid)) == set() and _at_prompt(master), 10)
        yield proc.pid, master
    finally:
        proc.kill()
        proc.wait()
        os.close(master)


def _take_the_terminal() -> None:
    """In the child: the pty on stdin becomes its controlling terminal (so bash runs foreground jobs)."""
    fcntl.ioctl(0, termios.TIOCSCTTY, 0)


def _at_prompt(master: int) -> bool:
    os.set_blocking(master, False)
    try:
        return b"$ " in os.read(master, 65536)
    except BlockingIOError:
        return False


def test_a_tree_holds_the_process_and_its_descendants() -> None:
    proc = subprocess.Popen(["sh", "-c", "sleep 30 & sleep 30 & wait"])
    try:
        wait_until(lambda: len(activity.tree(proc.pid)) == 3, 10)
        # all asleep once each has reached its sleep (a process just forked is runnable for a moment)
        assert wait_until(lambda: not activity.busy(activity.tree(proc.pid)), 10)
    finally:
        proc.kill()
        proc.wait()


def test_a_computing_process_is_busy() -> None:
    spin = "import time\nend = time.monotonic() + 20\nwhile time.monotonic() < end: pass"
    proc = subprocess.Popen([sys.executable, "-c", spin])
    try:
        assert wait_until(lambda: activity.busy([proc.pid]), 10)
    finally:
        proc.kill()
        proc.wait()


def test_a_command_on_a_timer_started_by_the_action_is_work(shell: tuple[int, int]) -> None:
    pid, master = shell
    work = activity.Work.of(pid)
    assert work is not None and not work.at_work()
    os.write(master, b"sleep 1; echo done\n")
    wait_until(work.at_work, 5, what="the job at work")
    wait_until(lambda: not work.at_work(), 10, what="the job over")


def test_a_pager_waiting_for_keys_is_at_rest(shell: tuple[int, int]) -> None:
    pid, master = shell
    work = activity.Work.of(pid)
    assert work is not None
    os.write(master, b"seq 1 1000 | less\n")
    wait_until(lambda: activity.jobs(activity.tree(pid)), 5, what="less in the foreground")
    wait_until(lambda: not work.at_work(), 10, what="less waiting for a key")
    assert activity.jobs(activity.tree(pid)) - work.before  # started by the action, and at rest all the same


def test_a_job_running_before_the_action_is_not_its_work(shell: tuple[int, int]) -> None:
    pid, master = shell
    os.write(master, b"sleep 30\n")
    wait_until(lambda: activity.jobs(activity.tree(pid)), 5, what="sleep in the foreground")
    # asleep: a process just forked is runnable (busy) for a moment, which is work of another kind
    wait_until(lambda: not activity.busy(activity.tree(pid)), 5, what="sleep asleep")
    work = activity.Work.of(pid)  # taken before the next keys, with sleep running
    assert work is not None and not work.at_work()


def _running(code: str) -> subprocess.Popen[bytes]:
    """A Python process that sets itself up, says so on stdout, then runs ``code``."""
    proc = subprocess.Popen([sys.executable, "-c", f"print(flush=True)\n{code}"], stdout=subprocess.PIPE)
    assert proc.stdout is not None and proc.stdout.readline() == b"\n"
    return proc


POLL = "import os, select\np = select.poll()"


@pytest.mark.parametrize(
    ("code", "waits"),
    [
        ("import select\nselect.poll().poll(-1)", True),  # input only
        ("import select\nselect.poll().poll(60_000)", True),  # a timer a minute away
        ("import threading\nthreading.Event().wait(60)", True),  # a futex with an absolute timeout
        ("import time\ntime.sleep(60)", True),
        ("import os, select\nselect.select([os.pipe()[0]], [], [], 60)", True),  # a timeval
        # a main loop watches several descriptors; a main thread polling one waits for a reply (libxcb's
        # for the X server's, GDBus's synchronous call), which is no rest; a worker polling one is idle
        (f"{POLL}\np.register(os.pipe()[0])\np.register(os.pipe()[0])\np.poll(-1)", True),
        (f"{POLL}\np.register(os.pipe()[0])\np.poll(-1)", False),
        (f"{POLL}\np.register(os.pipe()[0])\np.poll(25_000)", False),
        (
            f"{POLL}\np.register(os.pipe()[0])\nimport threading\n"
            "threading.Thread(target=p.poll, args=(-1,)).start()\nselect.select([], [], [])",
            True,
        ),
        (
            "import select\nwhile True: select.poll().poll(5)",
            False,
        ),  # a timer within a frame, again and again
        ("import time\nwhile True: time.sleep(0.01)", False),
        ("while True: pass", False),  # running
    ],
)
def test_waiting_reads_each_threads_wait_and_its_timer(code: str, waits: bool) -> None:
    proc = _running(code)
    try:
        # what it does right after the print takes a moment to reach its wait: a yes may come late, a no
        # must hold throughout
        if waits:
            assert wait_until(lambda: activity.waiting([proc.pid]), 5)
        else:
            assert not any(activity.waiting([proc.pid]) for _ in range(200))
    finally:
        proc.kill()
        proc.wait()


@pytest.mark.parametrize(
    ("code", "soon"),
    [
        ("import select\nwhile True: select.poll().poll(40)", True),  # the main loop's next step within 60 ms
        ("import select\nselect.poll().poll(5_000)", False),
        ("import select\nselect.poll().poll(-1)", False),
        # a worker's short timer (a pool's idle wait) is no drawing on its way
        (
            "import threading, time\n"
            "threading.Thread(target=lambda: [time.sleep(0.04) for _ in iter(int, 1)]).start()\n"
            "import select\nselect.select([], [], [])",
            False,
        ),
    ],
)
def test_a_timer_due_soon_is_read_on_main_threads_only(code: str, soon: bool) -> None:
    proc = _running(code)
    try:
        if soon:
            assert wait_until(lambda: activity.timer_soon([proc.pid]), 5)
            work = activity.Work(proc.pid)
            assert wait_until(work.at_work, 5)  # a quiet screen is a pause while it lasts
        else:
            assert wait_until(lambda: activity.due_ms(proc.pid, proc.pid) is not None, 5)  # in its wait
            assert not any(activity.timer_soon([proc.pid]) for _ in range(200))
    finally:
        proc.kill()
        proc.wait()


def test_a_delayed_reaction_is_read_within_a_horizon_on_main_and_gecko_timer_threads() -> None:
    # a main loop's 300 ms timer (GTK's tooltip comes 500 ms after the pointer rests): no step due within
    # 60 ms, one within a pointer's horizon; the program is not resting within that horizon
    main = _running("import select\nwhile True: select.poll().poll(300)")
    # Gecko keeps a page's timers on a thread named Timer: counted only where asked (a settle's early word)
    gecko = _running(
        "import ctypes, threading, time\n"
        "def timers():\n"
        "    ctypes.CDLL(None).prctl(15, b'Timer')\n"  # PR_SET_NAME
        "    while True: time.sleep(0.3)\n"
        "threading.Thread(target=timers).start()\n"
        "import select\nselect.select([], [], [])"
    )
    try:
        assert wait_until(lambda: activity.timer_soon([main.pid], 550), 5)
        assert not any(activity.timer_soon([main.pid]) for _ in range(100))
        work = activity.Work(main.pid)
        assert wait_until(work.resting, 5) and not any(work.resting(550) for _ in range(100))
        assert wait_until(lambda: activity.timer_soon([gecko.pid], 550, timer_threads=True), 5)
        assert not any(activity.timer_soon([gecko.pid], 550) for _ in range(100))  # main threads only
        assert not activity.Work(gecko.pid).at_work(550)
    finally:
        for proc in (main, gecko):
            proc.kill()
            proc.wait()


def test_a_shell_at_its_prompt_rests_and_one_running_a_job_on_a_timer_does_not(
    shell: tuple[int, int],
) -> None:
    pid, master = shell
    work = activity.Work.of(pid)
    assert work is not None
    assert wait_until(work.resting, 5)  # readline in pselect6 with no timeout
    os.write(master, b"sleep 1; echo done\n")
    wait_until(lambda: not work.resting(), 5, what="the job on its timer")
    wait_until(work.resting, 10, what="the prompt again")


def test_a_thread_that_cannot_be_read_is_not_known_to_wait() -> None:
    assert activity.due_ms(os.getpid(), 1 << 30) is None  # no such thread
    assert activity.waiting([1 << 30])  # no such process: it waits for nothing
