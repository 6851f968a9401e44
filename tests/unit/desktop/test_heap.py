"""The frame heap is kept while frames are made and given back once the service rests."""

from __future__ import annotations

import subprocess
import sys
import time

import numpy as np
import psutil

from deskpilot.desktop import heap


def rss_mib() -> float:
    return psutil.Process().memory_info().rss / 2**20


def test_the_heap_is_kept_while_frames_come_and_given_back_at_rest() -> None:
    heap.tune_malloc()  # as the service does: buffers under 32 MiB stay on the heap when freed
    rest = heap.Rest(rest_s=1.0)
    for _ in range(3):  # frames made and dropped: 60 MiB of heap, touched
        frames = [np.ones(20 << 20, np.uint8) for _ in range(3)]
        del frames
        rest.busy()
    kept = rss_mib()
    time.sleep(0.1)
    rest.busy()  # another frame within the rest: nothing was given back, and its rest starts again
    assert rest.trims == 0
    deadline = time.monotonic() + 5
    while rest.trims == 0:
        assert time.monotonic() < deadline, "never trimmed"
        time.sleep(0.02)
    assert kept - rss_mib() > 40, f"{kept:.0f} MiB kept, {rss_mib():.0f} MiB after the rest"
    rest.busy()  # a frame after the rest: its own rest follows
    while rest.trims == 1:
        assert time.monotonic() < deadline + 5, "no second rest"
        time.sleep(0.02)


LARGE_FILES = """
import os, sys
from deskpilot.desktop import heap
heap.tune_malloc()
kept = []
for _ in range(6):
    if sys.argv[1] == "given back":
        heap.before_large(24 << 20)
    data = os.urandom(24 << 20)  # a written file's bytes
    kept += [bytearray(100), os.urandom(3000)]  # small allocations while it lives, and after
    del data
    kept.append(os.urandom(5000))
print(next(int(line.split()[1]) for line in open("/proc/self/status") if line.startswith("VmHWM")))
"""


def test_a_large_buffer_made_again_and_again_is_laid_where_the_last_was() -> None:
    """A heap that kept a large buffer's pages, split since by small allocations, lays the next beside them:
    its peak grows by one each time. Given back before each, the peak holds one."""
    peak = {
        way: int(subprocess.run([sys.executable, "-c", LARGE_FILES, way], capture_output=True, text=True,
                                check=True).stdout) / 1024
        for way in ("kept", "given back")
    }  # fmt: skip
    assert peak["kept"] - peak["given back"] > 20, peak  # what the trim is for: this heap, in this process
