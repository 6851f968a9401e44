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

Reading a process tree costs ~10 µs a thread; a settle asks only when the screen has been quiet long enough.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from pathlib import Path

PROC = Path("/proc")
MAX_PROCESSES = 256  # a tree larger than this is read only this far


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


@dataclass(slots=True)
class Work:
    """The programs behind the window that got an action's input: its process, the jobs run before it."""

    pid: int
    before: set[int] = field(default_factory=set)
    # those of the pids asleep on a timer: a wait channel is readable by the process's user (and root) only,
    # so a service that is neither asks the desktop user's worker (hands.Hands.on_a_timer)
    timers: Callable[[Collection[int]], set[int]] = field(default=lambda pids: set(filter(on_a_timer, pids)))

    @classmethod
    def of(cls, pid: int) -> Work | None:
        return cls(pid, jobs(tree(pid))) if pid > 0 else None

    def at_work(self) -> bool:
        """Busy, or running a job the action started that sleeps on a timer."""
        pids = tree(self.pid)
        if busy(pids):
            return True
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
