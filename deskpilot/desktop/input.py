"""What every input action shares: one lock, so two clients never interleave keystrokes, and key helpers.

Key names resolve to keysyms (``deskpilot.computer.keys``); a keysym missing from the keyboard layout is put
on a spare ("scratch") keycode first, then pressed like any other.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Callable

from deskpilot.computer import keys
from deskpilot.desktop.connections import Connections
from deskpilot.desktop.x11.connection import XConnection
from deskpilot.errors import InvalidAction

SCRATCH_SETTLE_S = 0.03  # pause after binding scratch keycodes, so clients re-read the whole keymap


class Input:
    def __init__(self, connections: Connections) -> None:
        self.connections = connections
        self.lock = asyncio.Lock()

    @contextlib.asynccontextmanager
    async def session(self, hold: list[str] | None = None) -> AsyncIterator[XConnection]:
        """The input lock and the display, with ``hold`` keys held down around the body; syncs at the end."""
        async with self.lock:
            with self.connections.using() as x:
                await bind_keys(x, hold)
                held = keycodes(x, hold)
                press(x, held)
                try:
                    yield x
                finally:
                    release(x, held)
                    x.sync()


def keycodes(x: XConnection, names: list[str] | None) -> list[int]:
    """Keycodes for key names; names missing from the layout must have been bound (``bind_keys``)."""
    codes: list[int] = []
    for name in names or ():
        codes.extend(c for c in x.keycodes(keys.resolve(name)) if c not in codes)
    return codes


async def bind_keys(x: XConnection, names: list[str] | None) -> None:
    missing = {s for s in (keys.resolve(n) for n in names or ()) if not x.in_keymap(s)}
    x.require_typeable(missing)
    if len(missing) > x.scratch_capacity():
        raise InvalidAction(
            f"at most {x.scratch_capacity()} distinct keys outside the keyboard layout per action"
        )
    await bind(x, missing)


async def bind(x: XConnection, keysyms: set[int]) -> None:
    """Put characters missing from the layout on scratch keycodes, then let clients re-read the keymap."""
    if keysyms and x.bind(keysyms):
        x.sync()
        await asyncio.sleep(SCRATCH_SETTLE_S)


def press(x: XConnection, codes: list[int]) -> None:
    for keycode in codes:
        x.key(keycode, True)


def release(x: XConnection, codes: list[int]) -> None:
    for keycode in reversed(codes):
        x.key(keycode, False)


async def poll(predicate: Callable[[], bool], seconds: float, interval: float = 0.02) -> bool:
    """True as soon as ``predicate()`` holds, False if it still does not after ``seconds``."""
    deadline = time.monotonic() + seconds
    while not predicate():
        if time.monotonic() > deadline:
            return False
        await asyncio.sleep(interval)
    return True
