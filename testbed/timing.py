"""Timing helpers shared by tests and benchmarks: wait for a condition, time a call repeatedly."""

from __future__ import annotations

import time
from collections.abc import Callable


def wait_until(
    predicate: Callable[[], object], timeout: float = 10.0, interval: float = 0.02, what: str = ""
):
    """Poll ``predicate`` until it returns something truthy (returned); AssertionError after ``timeout``."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what or 'condition'}")
        time.sleep(interval)


def timed(
    fn: Callable[[], object], n: int, warmup: int = 5, between: Callable[[], object] | None = None
) -> list[float]:
    """Seconds taken by each of ``n`` calls of ``fn``, after ``warmup`` untimed calls; ``between`` runs
    untimed before each call."""
    for _ in range(warmup):
        fn()
    out = []
    for _ in range(n):
        if between is not None:
            between()
        t0 = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t0)
    return out
