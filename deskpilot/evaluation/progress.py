"""What ``deskpilot eval`` says while it runs: one line per finished task (as they finish, in any order when
tasks run in parallel), and on a terminal only a progress bar below them, redrawn every half second so a
long task does not look like a hang."""

from __future__ import annotations

import threading
import time
from types import TracebackType
from typing import Self, TextIO

from deskpilot.evaluation.report import why
from deskpilot.evaluation.runner import TaskResult

WIDTH = 30  # the bar's cells
WHY_CHARS = 160  # a failure's reason on its line: the report has it whole


def task_line(r: TaskResult, done: int, total: int) -> str:
    """``[ 3/10] FAIL  clipboard  COMPLETED  0.7 s  2 steps: the clipboard: is '', not 'x'``."""
    width = len(str(total))
    said = " ".join(why(r).split())  # one line, whatever the reason holds
    said = said if len(said) <= WHY_CHARS else said[: WHY_CHARS - 1] + "…"
    line = (
        f"[{done:>{width}}/{total}] {'pass' if r.passed else 'FAIL'}  {r.id}  {r.status}  {r.seconds:.1f} s"
    )
    line += f"  {r.steps} step{'' if r.steps == 1 else 's'}"
    return f"{line}: {said}" if said and not r.passed else line


class Progress:
    """Task lines to ``lines``; the bar to ``bar`` when given (a terminal), cleared before each line."""

    def __init__(self, total: int, lines: TextIO, bar: TextIO | None = None) -> None:
        self.total, self.done, self.passed = total, 0, 0
        self.lines, self.bar = lines, bar
        self.started = time.monotonic()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._ticker = threading.Thread(target=self._tick, daemon=True) if bar is not None else None

    def __enter__(self) -> Self:
        if self._ticker is not None:
            self._ticker.start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._stop.set()
        if self._ticker is not None:
            self._ticker.join()
        with self._lock:
            self._clear()

    def say(self, text: str) -> None:
        with self._lock:
            self._clear()
            print(text, file=self.lines, flush=True)
            self._draw()

    def finished(self, r: TaskResult) -> None:
        """One task finished: its line, then the bar one step further."""
        with self._lock:
            self.done += 1
            self.passed += r.passed
            self._clear()
            print(task_line(r, self.done, self.total), file=self.lines, flush=True)
            self._draw()

    def _tick(self) -> None:
        while not self._stop.wait(0.5):
            with self._lock:
                self._draw()

    def _clear(self) -> None:
        if self.bar is not None:
            self.bar.write("\r\x1b[K")
            self.bar.flush()

    def _draw(self) -> None:
        if self.bar is None:
            return
        full = WIDTH * self.done // max(self.total, 1)
        seconds = time.monotonic() - self.started
        failed = self.done - self.passed
        cells = "#" * full + "." * (WIDTH - full)
        self.bar.write(f"\r[{cells}] {self.done}/{self.total} done, {failed} failed, {seconds:.0f} s")
        self.bar.flush()
