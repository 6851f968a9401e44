"""The frame heap is kept while frames are made and given back once the service rests."""

from __future__ import annotations

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
