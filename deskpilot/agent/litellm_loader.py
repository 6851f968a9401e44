"""LiteLLM, imported off the event loop: once, in a thread of its own.

The import costs seconds of CPU and ~150 MiB, which the task service's event loop (the API, the
WebSocket, lease heartbeats) must not wait for, and which a service with no model configured should not
pay at all. ``litellm_module()`` is the one way in for code on the loop.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import importlib
import os
import threading
from types import ModuleType

from deskpilot import collector

# Modules LiteLLM imports lazily during its first call (the OpenAI client's resources, the proxy's types:
# ~0.3 s of imports that would stall the event loop); imported up front with LiteLLM itself.
FIRST_CALL_MODULES = ("openai.resources", "litellm.proxy._types")


def import_litellm() -> ModuleType:
    """Import LiteLLM here and now (blocking: ~3-6 s and ~150 MiB). Code on the event loop awaits
    ``litellm_module()`` instead."""
    # It fetches its model price map from GitHub at import time unless told not to (3 retries, ~2 s
    # offline). The bundled copy is what we want; set this before the first import.
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    import litellm

    for name in FIRST_CALL_MODULES:
        importlib.import_module(name)
    litellm.suppress_debug_info = True  # else it prints a "Give Feedback" banner on stdout at every error
    return litellm


_import_lock = threading.Lock()
_import: concurrent.futures.Future[ModuleType] | None = None


def _import_into(future: concurrent.futures.Future[ModuleType]) -> None:
    try:
        with collector.made_in_one_go():  # the import makes some 300,000 objects
            module = import_litellm()
    except BaseException as exc:  # handed to every waiter; the next caller tries again
        future.set_exception(exc)
        return
    future.set_result(module)


async def litellm_module() -> ModuleType:
    """LiteLLM, imported once in a thread of its own so the event loop (the API, the WebSocket, lease
    heartbeats) keeps answering meanwhile. Concurrent callers, on any event loop, await the same import;
    after a failed import the next caller starts another."""
    global _import
    with _import_lock:
        if _import is None or (_import.done() and _import.exception() is not None):
            _import = concurrent.futures.Future()
            threading.Thread(target=_import_into, args=(_import,), name="import litellm", daemon=True).start()
        pending = _import
    if pending.done() and pending.exception() is None:
        return pending.result()
    return await asyncio.wrap_future(pending)
