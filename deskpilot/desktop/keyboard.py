"""The keyboard actions: key sequences, chords held or released, and typing text."""

from __future__ import annotations

import asyncio

from deskpilot.computer import actions, keys
from deskpilot.desktop.input import Input, bind, bind_keys, keycodes, press, release
from deskpilot.desktop.outcome import Outcome
from deskpilot.desktop.x11.connection import XConnection

TYPE_YIELD_EVERY = 200  # characters typed between yields to the event loop when there is no delay
# pause before rebinding scratch keycodes pressed in this action: clients translate a key press with the
# keymap they hold when they process it, which may be well after the press (an estimate, not a guarantee)
SCRATCH_DRAIN_S = 0.3


class KeyboardActions:
    def __init__(self, input: Input) -> None:
        self.input = input

    async def type_keys(self, action: actions.TypeKeys) -> Outcome:
        async with self.input.session() as x:
            await bind_keys(x, action.keys)
            for i, name in enumerate(action.keys):
                if action.delay and i:
                    x.sync()
                    await asyncio.sleep(action.delay / 1000)
                codes = x.keycodes(keys.resolve(name))
                press(x, codes)
                release(x, codes)
        return Outcome()

    async def press_keys(self, action: actions.PressKeys) -> Outcome:
        async with self.input.session() as x:
            await bind_keys(x, action.keys)
            codes = keycodes(x, action.keys)
            if action.press == "down":
                press(x, codes)
            else:
                release(x, codes)
        return Outcome()

    async def type_text(self, action: actions.TypeText) -> Outcome:
        async with self.input.session() as x:
            await _type(x, action.text, action.delay or 0)
        return Outcome()


def _next_batch(x: XConnection, syms: list[int], start: int) -> tuple[int, set[int]]:
    """The end of the longest run from ``start`` whose characters missing from the layout fit on the
    scratch keycodes, and those characters."""
    batch: set[int] = set()
    end = start
    while end < len(syms):
        sym = syms[end]
        if not x.in_keymap(sym) and sym not in batch:
            if len(batch) >= x.scratch_capacity():
                break
            batch.add(sym)
        end += 1
    return end, batch


async def _type(x: XConnection, text: str, delay_ms: int) -> None:
    syms = [keys.char_keysym(c) for c in text]
    x.require_typeable(syms)  # before the first key: all of the text or none of it
    start = 0
    while start < len(syms):
        end, batch = _next_batch(x, syms, start)
        if start:  # the previous batch's scratch keycodes get rebound: let clients translate them first
            x.sync()
            await asyncio.sleep(SCRATCH_DRAIN_S)
        await bind(x, batch)
        for i in range(start, end):
            if i and delay_ms:
                x.sync()
                await asyncio.sleep(delay_ms / 1000)
            elif i and i % TYPE_YIELD_EVERY == 0:
                x.sync()
                await asyncio.sleep(0)
            codes = x.keycodes(syms[i])
            press(x, codes)
            release(x, codes)
        start = end
    x.sync()
