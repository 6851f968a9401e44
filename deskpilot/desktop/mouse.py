"""The mouse actions: move, trace, click, scroll, press, drag, and reading the pointer back."""

from __future__ import annotations

import asyncio

from deskpilot.computer import actions, fields
from deskpilot.desktop.input import Input, poll
from deskpilot.desktop.outcome import Outcome
from deskpilot.desktop.x11.connection import BUTTONS, SCROLL_BUTTONS, XConnection

DRAG_STEP_S = 0.005  # pause between drag points, so WMs and toolkits see a real drag
# how long a click with holdKeys waits for the window manager to let it through before the keys go up
HELD_CLICK_TIMEOUT_S = 1.0


class MouseActions:
    def __init__(self, input: Input) -> None:
        self.input = input

    async def move_mouse(self, action: actions.MoveMouse) -> Outcome:
        async with self.input.session() as x:
            x.move(*action.coordinates.xy)
        return Outcome()

    async def trace_mouse(self, action: actions.TraceMouse) -> Outcome:
        async with self.input.session(action.holdKeys) as x:
            for point in action.path:
                x.move(*point.xy)
                x.sync()
        return Outcome()

    async def click_mouse(self, action: actions.ClickMouse) -> Outcome:
        async with self.input.session(action.holdKeys) as x:
            button = BUTTONS[action.button]
            await _tap_held(x, action.coordinates, button, action.clickCount, bool(action.holdKeys))
        return Outcome()

    async def scroll(self, action: actions.Scroll) -> Outcome:
        async with self.input.session(action.holdKeys) as x:
            button = SCROLL_BUTTONS[action.direction]
            await _tap_held(x, action.coordinates, button, action.scrollCount, bool(action.holdKeys))
        return Outcome()

    async def press_mouse(self, action: actions.PressMouse) -> Outcome:
        async with self.input.session() as x:
            if action.coordinates is not None:
                x.move(*action.coordinates.xy)
            x.button(BUTTONS[action.button], action.press == "down")
        return Outcome()

    async def drag_mouse(self, action: actions.DragMouse) -> Outcome:
        points = [p.xy for p in action.path]
        if len(points) == 2:  # a few intermediate points so toolkits pass their drag threshold smoothly
            (x0, y0), (x1, y1) = points
            points = [(round(x0 + (x1 - x0) * i / 5), round(y0 + (y1 - y0) * i / 5)) for i in range(6)]
        pause = DRAG_STEP_S if len(points) <= 200 else 0
        button = BUTTONS[action.button]
        async with self.input.session(action.holdKeys) as x:
            x.move(*points[0])
            x.button(button, True)
            x.sync()
            try:
                for point in points[1:]:
                    if pause:
                        await asyncio.sleep(pause)
                    x.move(*point)
                    x.sync()
                if pause:
                    await asyncio.sleep(pause)
            finally:
                x.button(button, False)
        return Outcome()

    async def cursor_position(self, action: actions.CursorPosition) -> Outcome:
        with self.input.connections.using() as x:
            return Outcome(position=x.pointer())


def _tap(x: XConnection, where: fields.Coordinates | None, button: int, count: int) -> None:
    if where is not None:
        x.move(*where.xy)
    for _ in range(count):
        x.button(button, True)
        x.button(button, False)


async def _tap_held(
    x: XConnection, where: fields.Coordinates | None, button: int, count: int, held: bool
) -> None:
    """``_tap``; with keys held, keep them down until the window manager has let the clicks through.

    xfwm4 (click-to-focus) holds a synchronous passive grab on the buttons of client windows: a click
    is frozen until the WM has processed it and replays it. Key events are not frozen, so releasing the
    held keys right away would let the click reach the application after the release, without the
    modifier (a shift-click became a plain click when the WM was slow). Without held keys nothing
    waits (the click fast path). A pointer grabbed for good by a client (an open menu) costs a held click
    the bounded wait; waiting only when the pointer was free before the click is not enough, since
    the previous click may itself still be frozen.
    """
    _tap(x, where, button, count)
    if held:
        x.sync()
        await poll(lambda: not x.pointer_grabbed(), HELD_CLICK_TIMEOUT_S, interval=0.002)
