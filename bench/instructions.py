"""The instructions a request costs a service, counted by Valgrind (callgrind): what a change adds to a
request's work, free of what times carry (the machine's load, one process's memory layout against another's,
which on this machine move a p50 by 2-17 % between processes of the same code).

A service starts under callgrind with counting off (it runs ~5x slower, its start uncounted); ``count`` turns
counting on for a block of requests, waits ``after_s`` for the work they leave behind (spans written and
sent a moment later), writes the counts (``callgrind_control``) and turns counting off. Each of
the process's threads is counted apart: the main thread (the event loop, a request's path) and all of them.
The same wait with no request is counted once and taken away: a service's timers and polls, which a change of
the requests' path leaves alone. Two processes of the same code count within ~0.1 % of each other (the click:
1,194,677 and 1,193,424 on the main thread), where their times differ by percents. User-space instructions
only: the kernel's share of a request (sockets, the X server's, SQLite's writes) is not counted, and an
instruction is no fixed time (code hot in a loop runs several times more a microsecond than code a request
touches once), so a share of these counts says what a change adds, not what it costs in time.

Valgrind is Debian's ``valgrind`` (scripts/install-system.sh --test installs it).
"""

from __future__ import annotations

import shutil
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from bench.served import Served

OPTIONS = ("--tool=callgrind", "--instr-atstart=no", "--separate-threads=yes", "--dump-instr=no")


def available() -> bool:
    return shutil.which("valgrind") is not None and shutil.which("callgrind_control") is not None


@dataclass(frozen=True)
class Counts:
    main: float  # instructions a request, the main thread
    every: float  # all threads

    def __sub__(self, other: Counts) -> Counts:
        return Counts(self.main - other.main, self.every - other.every)


class Counted:
    """A service that runs under callgrind, its counts written to files in ``directory``."""

    def __init__(self, served: Served, directory: Path) -> None:
        self.served = served
        self.out = directory / f"callgrind.{served.name}.{id(self)}"
        self.idle: Counts | None = None

    def wrapper(self) -> list[str]:
        return ["valgrind", *OPTIONS, f"--callgrind-out-file={self.out}"]

    def _control(self, *args: str) -> None:
        assert self.served.proc is not None
        subprocess.run(
            ["callgrind_control", *args, str(self.served.proc.pid)], check=True, capture_output=True
        )

    def _window(self, send: Callable[[], object], n: int, after_s: float) -> Counts:
        before = set(self.out.parent.glob(f"{self.out.name}.*"))
        self._control("-i", "on")
        for _ in range(n):
            send()
        time.sleep(after_s)
        self._control("-d")
        self._control("-i", "off")
        main = every = 0
        for dump in set(self.out.parent.glob(f"{self.out.name}.*")) - before:
            thread, total = header(dump)
            every += total
            main += total if thread == 1 else 0
        return Counts(main, every)

    def count(self, send: Callable[[], object], n: int, after_s: float = 6.0) -> Counts:
        """Instructions a request of ``send`` costs, with what it leaves behind within ``after_s``; a
        window as long with no request is measured once and taken away."""
        if self.idle is None:
            time.sleep(after_s)  # what came before (a warm-up's spans, the journal's frame) done, uncounted
            self.idle = self._window(lambda: None, 0, after_s)
        window = self._window(send, n, after_s) - self.idle
        return Counts(window.main / n, window.every / n)


def header(dump: Path) -> tuple[int, int]:
    """A callgrind file's thread number and its total of instructions."""
    thread = total = 0
    with dump.open() as lines:
        for line in lines:
            if line.startswith("thread:"):
                thread = int(line.split()[1])
            elif line.startswith("totals:"):
                total = int(line.split()[1])
                break
    return thread, total
