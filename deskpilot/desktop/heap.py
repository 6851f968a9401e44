"""The desktop service's heap: frame-sized buffers kept while frames are made, given back once it rests.

A page fault costs ~2.7 µs on a small VM, and a 1080p frame re-faulted per screenshot loses 3-9 ms, so
glibc's heap keeps what frames were made in (``tune_malloc``). Kept for good, that heap is ~20-30 MiB of an
idle service's memory (the RGB frame, fpng's two buffers of its size, a resampling's intermediate). ``Rest``
hands it back (``malloc_trim``) once no frame was made for ``REST_S``: an agent's steps, seconds apart, keep
it; a desktop nobody drives gives it back, and its next frame pays the faults once.
"""

from __future__ import annotations

import contextlib
import threading
import time

from deskpilot.desktop.x11.shm import libc

REST_S = 30.0
# A buffer at least this large that is made rarely (a written file's bytes) gives the heap back first
# (``before_large``); frames are smaller than the mmap threshold too, but made all the time.
LARGE = 4 << 20


def tune_malloc() -> None:
    """Keep frame-sized buffers on the heap instead of fresh mmaps. Same effect as MALLOC_MMAP_THRESHOLD_=32
    MiB and MALLOC_TRIM_THRESHOLD_=1 GiB. And one arena (MALLOC_ARENA_MAX=1): each thread that captures,
    resamples or stores a frame would otherwise keep frame-sized buffers of its own in an arena of its own
    (~15 MiB of RSS after bench/desktop.py's run)."""
    m_trim_threshold, m_mmap_threshold, m_arena_max = -1, -3, -8
    with contextlib.suppress(AttributeError):
        libc.mallopt(m_mmap_threshold, 32 << 20)
        libc.mallopt(m_trim_threshold, 1 << 30)
        libc.mallopt(m_arena_max, 1)


def give_back() -> None:
    """Return the heap's free pages to the system (``malloc_trim``: its top, and the pages of free chunks
    within it)."""
    with contextlib.suppress(AttributeError):
        libc.malloc_trim(0)


def before_large(size: int) -> None:
    """Before a buffer of ``size`` bytes is made on the heap: a large one's freed pages (the last written
    file's), split since by small allocations made at their start, would not take the next, laid beside
    them; six writes of 24 MiB files once peaked 24 MiB above one. Given back first, the heap holds one."""
    if size >= LARGE:
        give_back()


class Rest:
    """Calls ``malloc_trim`` once ``rest_s`` passed after the last ``busy``; a thread of its own, started at
    the first ``busy``, that sleeps while nothing is made."""

    def __init__(self, rest_s: float = REST_S) -> None:
        self.rest_s = rest_s
        self.trims = 0
        self._last = 0.0
        self._made = threading.Event()
        self._thread: threading.Thread | None = None
        self._start = threading.Lock()

    def busy(self) -> None:
        """A frame was made: the heap is wanted for ``rest_s`` more (an assignment, on every frame)."""
        self._last = time.monotonic()
        if not self._made.is_set():
            if self._thread is None:
                with self._start:
                    if self._thread is None:
                        self._thread = threading.Thread(target=self._run, name="heap rest", daemon=True)
                        self._thread.start()
            self._made.set()

    def _run(self) -> None:
        while True:
            self._made.wait()
            while (left := self._last + self.rest_s - time.monotonic()) > 0:
                time.sleep(left)
            self._made.clear()  # a frame made from here on waits for its own rest
            give_back()
            self.trims += 1


rest = Rest()
