"""paste_text: put the text on the clipboard, press the paste chord of the focused window, wait for it to
read the text (a terminal pastes with ctrl+shift+v, everything else with ctrl+v)."""

from __future__ import annotations

import asyncio
import time

from deskpilot.computer import actions
from deskpilot.desktop import apps
from deskpilot.desktop.input import Input, keycodes, poll, press, release
from deskpilot.desktop.outcome import Outcome
from deskpilot.desktop.x11.connection import XConnection

PASTE_FETCH_TIMEOUT_S = 2.0
PASTE_SETTLE_S = 0.03


class PasteActions:
    def __init__(self, input: Input) -> None:
        self.input = input

    async def paste_text(self, action: actions.PasteText) -> Outcome:
        async with self.input.session() as x:
            paste = await self.input.connections.clipboard().offer(action.text)
            active = x.active_window()
            codes = keycodes(x, _paste_chord(x, active))
            press(x, codes)
            release(x, codes)
            x.sync()
            if not active:  # with no focused window nobody will fetch it
                return Outcome(message="no window has the focus; the text is on the clipboard")

            def done() -> bool:  # read (property deleted), or handed over to a client that never deletes
                written = paste.written_at
                return paste.consumed.is_set() or bool(written and time.monotonic() - written > 0.5)

            await poll(done, PASTE_FETCH_TIMEOUT_S, interval=0.005)
            if not paste.written_at:
                return Outcome(message="pasted, but the focused window did not fetch the clipboard")
            await asyncio.sleep(PASTE_SETTLE_S)  # the app inserts what it read before the next action
        return Outcome()


def _paste_chord(x: XConnection, window: int) -> list[str]:
    instance, cls = x.wm_class(window) if window else ("", "")
    terminal = cls.lower() in apps.TERMINAL_CLASSES or instance.lower() in apps.TERMINAL_CLASSES
    return ["ctrl", "shift", "v"] if terminal else ["ctrl", "v"]
