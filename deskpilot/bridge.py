"""Running the two directions of a WebSocket bridge (the desktop's /vnc, the UI's proxy) as one unit."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Coroutine
from typing import Any


async def pump_until_either_ends(
    *pumps: Coroutine[Any, Any, None], closed: tuple[type[BaseException], ...]
) -> None:
    """Run the pumps until the first one ends, then cancel the rest. ``closed`` are the errors of a peer
    that went away mid-transfer: the normal way a bridge ends, not a failure of ours."""
    tasks = [asyncio.create_task(p) for p in pumps]
    try:
        await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for t in tasks:
            t.cancel()
        for t in tasks:
            with contextlib.suppress(asyncio.CancelledError, *closed):
                await t
