"""The cyclic garbage collector in a long-running service: what it made to start is left out of collections.

A full collection walks every object the collector tracks. A service holds ~130,000 once it has started (its
imports, its app, its routes), and walking them takes 60-100 ms on a small VM: a stall of the event loop,
every request and every settle's look waiting behind it, that comes back every few thousand requests. Those
objects live as long as the service does, so a service freezes them (``gc.freeze``) as it starts to serve and
its collections walk only what was made since: under a millisecond. Nothing is lost: the few cycles its
start left (~20 objects) are kept until it stops, and when its lifespan ends the frozen objects go back to
the collector, so a process that makes app after app (a test session) collects them as before.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def serving() -> Iterator[None]:
    """Around a service's lifespan once it has started: what exists now is never walked again meanwhile."""
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


@contextmanager
def made_in_one_go() -> Iterator[None]:
    """Around a large import in a service that already serves (LiteLLM: ~300,000 objects). Each full
    collection it would set off meanwhile walks the whole heap and holds the GIL for 100-300 ms, stalling the
    event loop's thread as much as an import on it would; so collection waits until the block is done, and
    what it made is frozen as a service's start is (``serving``)."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        if collecting:
            gc.enable()
