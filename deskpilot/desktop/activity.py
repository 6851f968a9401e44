"""Whether the programs behind a window are still at work on an action, read from /proc.

A quiet screen is not rest while the program that got the input is still computing (KeePassXC deriving a
key, a script started in the terminal) or a command the action started is still running in a terminal (its
output comes when it ends, as `sleep 1; echo done` shows). So a settle also asks, once the screen is quiet:

- **busy**: is a thread of the window's process (its _NET_WM_PID) or of a descendant running or runnable
  (state R) or in uninterruptible I/O (D)? Sleeping threads wait for input or a timer, which is rest.
- **a job it started, on a timer**: is a terminal's shell running a foreground job (its terminal's foreground
  process group is not its own) that was not running before the action, with a process asleep on a timer
  (`sleep 1`, `time.sleep`: its kernel wait channel is a nanosleep)? A job waiting for the terminal, a pipe
  or a poll (`less`, an editor, a REPL) is at rest: it waits for the next input. A job running since before
  the action is where the keys went, not work the action started.
- **a timer due soon**: does the main thread of one of them sleep on a timer due within ``SOON_MS``? Its
  toolkit goes on then (a tooltip, a repaint), so a quiet period that ends meanwhile is a pause.

And the other way round, so that a settle need not wait out its whole quiet period after every drawing:

- **waiting**: is every thread of the window's programs asleep, waiting for input or for a timer due no sooner
  than ``SOON_MS``? Read from each thread's ``/proc/<pid>/task/<tid>/syscall``: the timeout of its poll or
  epoll, or of its futex, select, sleep or ppoll (read from its memory). A toolkit with something left to
  draw is runnable or has a timer due soon: GTK's frame clock within 17 ms, VTE's processing and repaint
  timers at 10, 15 and 30 ms, Thunar's status bar at 50 ms (``SOON_MS`` covers the settle's default quiet
  period, so no timer the quiet period would have waited for is missed). A program that has answered and
  drawn everything waits with no timer, or a long one (a clock, a thread pool's idle threads). A program
  waiting for another one's reply (the X server's, a D-Bus peer's) may look the same, so a settle asks
  twice, ``EARLY_MS`` apart; and a main thread polling a single descriptor is taken for such a wait: a
  toolkit's main loop watches several (its wakeup, the X connection ...), while libxcb waiting for the X
  server's reply and a synchronous D-Bus call (GDBus's private loop, 25 s by default) poll one. Thunar makes
  such calls while it loads a folder it was sent to, before it draws the folder. A worker thread
  polling one descriptor is idle (GLib's ``gmain``, Qt's X event reader). Firefox keeps timers of every
  length in its many threads, so it is rarely seen waiting: its settles keep the full quiet period. Only the
  programs' user (and root) may read these files, hence the desktop user's worker.

Reading a process tree costs ~10 µs a thread; a settle asks only when the screen has been quiet long enough.
"""

from __future__ import annotations

import contextlib
import os
import struct
import time
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from pathlib import Path

PROC = Path("/proc")
MAX_PROCESSES = 256  # a tree larger than this is read only this far
SOON_MS = 60  # a timer due sooner may be a drawing on its way (see ``waiting``)
# Gecko's thread of timers (Firefox, Thunderbird): it wakes the main thread when one of them is due
TIMER_THREADS = frozenset({"Timer"})


def tree(pid: int) -> list[int]:
    """``pid`` and its descendants (from each thread's ``children``), those that still exist."""
    found: list[int] = []
    queue = [pid]
    while queue and len(found) < MAX_PROCESSES:
        current = queue.pop()
        found.append(current)
        with contextlib.suppress(OSError):
            for task in (PROC / str(current) / "task").iterdir():
                queue += [int(c) for c in (task / "children").read_text().split()]
    return found


def _stat(path: Path) -> list[str]:
    """The fields of a stat file after the command's name (which may hold spaces and parentheses)."""
    text = path.read_text()
    return text[text.rindex(")") + 2 :].split()


def busy(pids: list[int]) -> bool:
    """Whether a thread of ``pids`` is running, runnable or in uninterruptible I/O."""
    for pid in pids:
        with contextlib.suppress(OSError):
            for task in (PROC / str(pid) / "task").iterdir():
                with contextlib.suppress(OSError, ValueError):
                    if _stat(task / "stat")[0] in ("R", "D"):
                        return True
    return False


def jobs(pids: list[int]) -> set[int]:
    """The foreground process groups of the terminals ``pids`` lead that are not their own: the commands a
    shell among them is running."""
    running = set()
    for pid in pids:
        with contextlib.suppress(OSError, ValueError, IndexError):
            fields = _stat(PROC / str(pid) / "stat")
            group, tty, foreground = int(fields[2]), int(fields[4]), int(fields[5])
            if tty and foreground > 0 and foreground != group:
                running.add(foreground)
    return running


# x86-64 system call numbers of the waits ``waiting`` reads, and where each keeps its timeout
_POLL, _SELECT, _NANOSLEEP, _FUTEX, _EPOLL_WAIT, _CLOCK_NANOSLEEP = 7, 23, 35, 202, 232, 230
_PSELECT6, _PPOLL, _EPOLL_PWAIT = 270, 271, 281
_IN_MEMORY = frozenset({_PPOLL, _PSELECT6, _SELECT, _FUTEX, _NANOSLEEP, _CLOCK_NANOSLEEP})  # read from memory
_FUTEX_WAIT, _FUTEX_WAIT_BITSET, _FUTEX_CMD, _FUTEX_CLOCK_REALTIME = 0, 9, 0x7F, 256
# blocking reads and waits with no timeout of their own: read, readv, recvfrom, recvmsg, accept, accept4,
# wait4, waitid, pause, rt_sigsuspend
_WAITS_FOR_INPUT = frozenset({0, 19, 45, 47, 43, 288, 61, 247, 34, 130})
_TIMESPEC = struct.Struct("qq")
_NO_TIMER = float("inf")
_X86_64 = os.uname().machine == "x86_64"  # the numbers above are x86-64's


def waiting(pids: Collection[int], soon_ms: float = SOON_MS) -> bool:
    """Whether every thread of ``pids`` sleeps waiting for input, or for a timer due no sooner than
    ``soon_ms`` (an upper bound: a relative timeout is counted whole, as if the wait had just begun). False
    when a thread runs, waits in a way not read here (``due_ms``) or cannot be read: not known to rest."""
    for pid in pids:
        try:
            tids = os.listdir(PROC / str(pid) / "task")
        except OSError:
            continue  # gone: it waits for nothing
        for tid in tids:
            due = due_ms(pid, int(tid))
            if due is None or due < soon_ms:
                return False
    return True


def timer_soon(pids: Collection[int], soon_ms: float = SOON_MS, timer_threads: bool = False) -> bool:
    """Whether the main thread of one of ``pids`` sleeps on a timer due sooner than ``soon_ms``: the toolkit's
    next step is on its way (GTK shows the tooltip of the next widget pointed at ~60 ms after, once one was
    shown, and 500 ms after the pointer came to rest; VTE repaints on 10-30 ms timers). Only main threads: a
    worker's short timer (a thread pool's idle wait, a collector's) draws nothing. At rest the appliance's GTK
    and Qt applications keep no main-thread timer due within seconds (surveyed every 5 ms for 4 s: the
    terminal, Geany, Thunar, KeePassXC, the desktop, the panel, the window manager). With ``timer_threads``,
    Gecko's thread of all its process's timers too (``TIMER_THREADS``: a page's ``setTimeout``), which
    always has one due within 550 ms while Firefox shows a page: it is never seen resting then."""
    for pid in pids:
        if (due := due_ms(pid, pid)) is not None and due < soon_ms:
            return True
        if timer_threads and any(
            (due := due_ms(pid, tid)) is not None and due < soon_ms for tid in _timer_threads(pid)
        ):
            return True
    return False


def _timer_threads(pid: int) -> list[int]:
    """The threads of ``pid`` that keep its timers for its main thread (``TIMER_THREADS``)."""
    found = []
    with contextlib.suppress(OSError):
        for tid in os.listdir(PROC / str(pid) / "task"):
            with contextlib.suppress(OSError):
                if (PROC / str(pid) / "task" / tid / "comm").read_text().strip() in TIMER_THREADS:
                    found.append(int(tid))
    return found


def due_ms(pid: int, tid: int) -> float | None:
    """In how many ms at most thread ``tid`` of ``pid`` wakes from its timer (infinity: no timer); None when
    it runs, or its wait cannot be read. x86-64 only (other machines: None, so never known to wait)."""
    task = PROC / str(pid) / "task" / str(tid)
    try:
        if _stat(task / "stat")[0] in ("R", "D"):
            return None
        text = (task / "syscall").read_text()
        call = text.split()
        if len(call) < 7 or not _X86_64:
            return None
        number, args = int(call[0]), [int(a, 16) for a in call[1:7]]
        if tid == pid and number in (_POLL, _PPOLL) and args[1] == 1:
            return None  # waiting for one peer's reply (see the module's notes), not for input
        ran = _ran(task) if number in _IN_MEMORY else ""
        due = _timeout(pid, number, args)
        if (
            due is not None
            and number in _IN_MEMORY
            and (_ran(task) != ran or (task / "syscall").read_text() != text)
        ):
            # it ran while its timeout was read from its memory, which may then hold anything (even when it
            # is back in the same wait, the slot may have been another frame's at the moment it was read)
            return None
        return due
    except (OSError, ValueError, IndexError, struct.error):
        return None  # exited, running ("running" has no arguments) or unreadable


def _ran(task: Path) -> str:
    """The thread's scheduler statistics (time run, runs), which change whenever it runs; "" unreadable."""
    try:
        return (task / "schedstat").read_text()
    except OSError:
        return ""


def _timeout(pid: int, number: int, args: list[int]) -> float | None:
    if number in (_POLL, _EPOLL_WAIT, _EPOLL_PWAIT):
        ms = _int32(args[2] if number == _POLL else args[3])
        return _NO_TIMER if ms < 0 else float(ms)
    if number in (_PPOLL, _PSELECT6):  # bash's readline waits in pselect6
        at = args[2] if number == _PPOLL else args[4]
        return _NO_TIMER if at == 0 else _timespec(pid, at) / 1e6
    if number == _SELECT:  # a struct timeval: seconds and microseconds
        if args[4] == 0:
            return _NO_TIMER
        seconds, us = _pair(pid, args[4])
        return seconds * 1e3 + us / 1e3
    if number == _FUTEX:
        command = args[1] & _FUTEX_CMD
        if command not in (_FUTEX_WAIT, _FUTEX_WAIT_BITSET):
            return None
        if args[3] == 0:
            return _NO_TIMER
        ns = _timespec(pid, args[3])
        if command == _FUTEX_WAIT:
            return ns / 1e6
        clock = time.CLOCK_REALTIME if args[1] & _FUTEX_CLOCK_REALTIME else time.CLOCK_MONOTONIC
        return (ns - time.clock_gettime_ns(clock)) / 1e6
    if number == _NANOSLEEP:
        return _timespec(pid, args[0]) / 1e6
    if number == _CLOCK_NANOSLEEP:
        ns = _timespec(pid, args[2])
        return (ns - time.clock_gettime_ns(args[0])) / 1e6 if args[1] & 1 else ns / 1e6  # TIMER_ABSTIME
    return _NO_TIMER if number in _WAITS_FOR_INPUT else None


def _int32(value: int) -> int:
    value &= 0xFFFFFFFF
    return value - (1 << 32) if value & 0x80000000 else value


def _timespec(pid: int, address: int) -> int:
    """A struct timespec in the process's memory, in ns."""
    seconds, ns = _pair(pid, address)
    return seconds * 1_000_000_000 + ns


def _pair(pid: int, address: int) -> tuple[int, int]:
    """Two 64-bit integers in the process's memory (a struct timespec or timeval)."""
    with open(PROC / str(pid) / "mem", "rb", buffering=0) as memory:
        memory.seek(address)
        first, second = _TIMESPEC.unpack(memory.read(_TIMESPEC.size))
    return first, second


@dataclass(slots=True)
class Work:
    """The programs behind the window that got an action's input: its process, the jobs run before it, and
    the others that may draw in answer (the window manager, the panel and the desktop)."""

    pid: int
    before: set[int] = field(default_factory=set)
    # those of the pids asleep on a timer: a wait channel is readable by the process's user (and root) only,
    # so a service that is neither asks the desktop user's worker (hands.Hands.on_a_timer)
    timers: Callable[[Collection[int]], set[int]] = field(default=lambda pids: set(filter(on_a_timer, pids)))
    others: tuple[int, ...] = ()
    waits: Callable[[Collection[int]], bool] = field(default=waiting)  # likewise (hands.Hands.waiting)
    # likewise (hands.Hands.timer_soon): the pids, the horizon in ms, whether Gecko's timer threads count
    soon: Callable[[Collection[int], float, bool], bool] = field(default=timer_soon)
    window: int = 0  # the window that got the input, whose client confirms rest (settle.Watch.confirmed)

    @classmethod
    def of(cls, pid: int) -> Work | None:
        return cls(pid, jobs(tree(pid))) if pid > 0 else None

    def at_work(self, within_ms: float = SOON_MS) -> bool:
        """Busy, running a job the action started that sleeps on a timer, or about to go on with a timer of a
        main thread due within ``within_ms`` (``timer_soon``): a quiet screen then is a pause, not rest."""
        pids = tree(self.pid)
        if busy(pids):
            return True
        return self._on_a_timer(pids) or self.soon(pids, within_ms, False)

    def started_job(self) -> bool:
        """Running a job the action started that sleeps on a timer."""
        return self._on_a_timer(tree(self.pid))

    def resting(self, within_ms: float = SOON_MS) -> bool:
        """Every thread of the programs (the others too) waits with no timer due soon, no job the action
        started sleeps on a timer, and no main thread of the window's programs has a timer due within
        ``within_ms`` (nor a Gecko timer thread, then): what they were to draw in answer, they have sent to
        the X server."""
        pids = tree(self.pid)
        # the job first: one that ends after its shell was seen waiting for it would pass both reads
        if self._on_a_timer(pids):
            return False
        if not self.waits([*pids, *(p for other in self.others for p in tree(other))]):
            return False
        return within_ms <= SOON_MS or not self.soon(pids, within_ms, True)

    def _on_a_timer(self, pids: list[int]) -> bool:
        started = jobs(pids) - self.before
        return bool(started) and bool(self.timers([pid for pid in pids if _group(pid) in started]))


def _group(pid: int) -> int:
    with contextlib.suppress(OSError, ValueError, IndexError):
        return int(_stat(PROC / str(pid) / "stat")[2])
    return 0


def on_a_timer(pid: int) -> bool:
    """Whether the process sleeps on a timer (hrtimer_nanosleep, do_nanosleep: sleep(1), time.sleep)."""
    with contextlib.suppress(OSError):
        return "nanosleep" in (PROC / str(pid) / "wchan").read_text()
    return False
