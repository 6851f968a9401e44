"""The ``accessibility`` action and the ``element`` of ``click_mouse`` and ``type_text``: the tree is read by
the hands (``accessibility.py``, where the desktop user's rights are); here the service adds what X knows
(which window is active) and maps the answer's bounds into the ``space`` the client asked for."""

from __future__ import annotations

import functools
import time
from collections.abc import Awaitable, Callable
from typing import Any

from deskpilot.computer import actions
from deskpilot.computer.fields import Coordinates, ImageSpace
from deskpilot.desktop.atspi import Query
from deskpilot.desktop.connections import Connections
from deskpilot.desktop.hands import Hands
from deskpilot.desktop.outcome import Outcome
from deskpilot.desktop.x11 import focus as x_focus
from deskpilot.errors import DesktopError

QUIET_S = 30.0  # after the AT-SPI bus (or the worker) failed to answer, textChanged rests this long


class ElementActions:
    def __init__(
        self, connections: Connections, hands: Hands, click: Callable[[Any], Awaitable[Outcome]]
    ) -> None:
        self.connections = connections
        self.hands = hands
        self.click = click  # MouseActions.click_mouse, for an element that does not take the focus
        self._quiet_until = 0.0

    async def accessibility(self, action: actions.Accessibility) -> Outcome:
        pid, title = (0, "") if action.window == "all" else self.active()
        within = action.within.box if action.within is not None else None
        query = Query(action.window, action.maxDepth, action.interactiveOnly, within, pid, title)
        tree = await self.hands.accessibility(query)
        if action.space is not None and tree.get("root") is not None:
            _into(tree["root"], action.space)
        return Outcome(data=tree)

    def active(self) -> tuple[int, str]:
        """The X active window's process and title: AT-SPI knows no X window, so the focused tree is the
        top-level of that process's application that is active (or titled so)."""
        with self.connections.using() as x:
            focus = x_focus.focused(x)
            return (x.window_pid(focus.id), focus.title) if focus is not None else (0, "")

    async def centre(self, element: str) -> Coordinates:
        """Where to click ``element`` now: its bounds' centre (400 once it is gone or hidden)."""
        box = (await self.hands.element(element))["bounds"]
        return Coordinates(x=box["x"] + box["width"] // 2, y=box["y"] + box["height"] // 2)

    async def resolve(self, action: actions.Action) -> actions.Action:
        """An input action on an ``element`` as the action it stands for: a click at its centre; for typing,
        the element focused first (by AT-SPI, else by a click on it)."""
        if isinstance(action, actions.ClickMouse) and action.element is not None:
            return action.model_copy(update={"coordinates": await self.centre(action.element)})
        if not isinstance(action, actions.TypeText) or action.element is None:
            return action
        if not await self.hands.focus_element(action.element):
            at = await self.centre(action.element)
            await self.click(
                actions.ClickMouse(action="click_mouse", coordinates=at, button="left", clickCount=1)
            )
        return action

    async def text_before(self, action: actions.Action, pid: int) -> dict[str, Any] | None:
        """For textChanged: the text the keys will go to, the action's ``element`` or the focused one of the
        active window's application (None when there is none, or no tree: then it is left out)."""
        element = getattr(action, "element", None)
        if element is None and not pid:
            return None
        if element is not None:
            return await self._text(functools.partial(self.hands.text_state, element))
        return await self._text(functools.partial(self.hands.focused_text, pid))

    async def text_after(self, before: dict[str, Any] | None) -> dict[str, Any] | None:
        if before is None:
            return None
        return await self._text(functools.partial(self.hands.text_state, before["element"]))

    async def _text(self, read: Callable[[], Awaitable[dict[str, Any] | None]]) -> dict[str, Any] | None:
        """A read of a text for evidence, which must not fail an action, nor slow every keystroke of a
        desktop whose AT-SPI bus does not answer: after such a failure it is not tried for ``QUIET_S``."""
        if time.monotonic() < self._quiet_until:
            return None
        try:
            return await read()
        except DesktopError:  # the bus or the worker does not answer
            self._quiet_until = time.monotonic() + QUIET_S
            return None


def _into(node: dict[str, Any], space: ImageSpace) -> None:
    """Bounds in screen pixels → the pixels of the image ``space`` describes (None when off it)."""
    box = node.get("bounds")
    if box is not None:
        x0, y0 = space.to_image(box["x"], box["y"])
        x1, y1 = space.to_image(box["x"] + box["width"] - 1, box["y"] + box["height"] - 1)
        region = space.region
        off = region is not None and (
            box["x"] >= region.x + region.width
            or box["y"] >= region.y + region.height
            or box["x"] + box["width"] <= region.x
            or box["y"] + box["height"] <= region.y
        )
        node["bounds"] = None if off else {"x": x0, "y": y0, "width": x1 - x0 + 1, "height": y1 - y0 + 1}
    for child in node["children"]:
        _into(child, space)
