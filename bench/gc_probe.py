"""A service's app, its full garbage collections timed (``bench/collector.py``). ``BENCH_FACTORY`` names the
app's factory (module:function); ``BENCH_UNFROZEN=1`` builds it with nothing frozen (``collector.serving``
does nothing: the build before it); on SIGUSR1 the process writes the full collections its main thread ran
so far, each one's milliseconds, to ``BENCH_GC_OUT`` (JSON)."""

from __future__ import annotations

import contextlib
import gc
import importlib
import json
import os
import signal
import threading
import time
from typing import Any

from deskpilot import collector

MAIN = threading.main_thread().ident
pauses_ms: list[float] = []
_started = [0]


def _timed(phase: str, info: dict[str, int]) -> None:
    if info["generation"] != 2 or threading.get_ident() != MAIN:
        return
    if phase == "start":
        _started[0] = time.perf_counter_ns()
    else:
        pauses_ms.append((time.perf_counter_ns() - _started[0]) / 1e6)


def _write(*_: object) -> None:
    with open(os.environ["BENCH_GC_OUT"], "w") as out:
        json.dump({"pauses_ms": pauses_ms, "frozen": gc.get_freeze_count()}, out)


def app() -> Any:
    if os.environ.get("BENCH_UNFROZEN") == "1":
        collector.serving = contextlib.nullcontext  # type: ignore[assignment]
    gc.callbacks.append(_timed)
    signal.signal(signal.SIGUSR1, _write)
    module, name = os.environ["BENCH_FACTORY"].split(":")
    return getattr(importlib.import_module(module), name)()
