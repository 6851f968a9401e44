"""A human's input on an interactive live view, as the actions an API client would have sent for it.

The VNC bridge forwards an interactive connection's bytes as they come, then hands a copy to
``HumanInput.feed``, which follows the stream (``rfb.ClientStream``, the view-only filter's follower) and
turns its KeyEvents and PointerEvents into ``POST /computer-use`` requests for the journal:

- a press and release at one spot: ``click_mouse`` (a second one soon after at the same spot makes it a
  double click: ``clickCount`` 2, and so on); press, move, release elsewhere: ``drag_mouse`` with the path;
- wheel buttons 4-7: ``scroll``, notches in one direction at one spot counted together;
- printable keys (Shift and AltGr allowed): ``type_text``, coalesced until a pause or other input;
- keys without a character (Return, Tab, arrows, F-keys ...) and no modifier held: ``type_keys``;
- a key pressed with Ctrl, Alt or Super held (or Shift with a key that has no character): a chord, recorded
  as ``press_keys`` down then up, since ``type_keys`` is a sequence and would replay ctrl then l, not
  ctrl+l; modifiers held over a click, drag or scroll become its ``holdKeys``.

Moves with no button held are not recorded: a click or drag says where the pointer was.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from typing import Any

from deskpilot.computer.fields import MAX_CLICKS, MAX_SCROLLS
from deskpilot.computer.geometry import SCREEN
from deskpilot.computer.keys import key_name, keysym_char
from deskpilot.desktop.rfb import ClientStream, ProtocolError, key_event, pointer_event

log = logging.getLogger(__name__)

Record = Callable[[dict[str, Any], float], None]  # (the action, when it started: epoch seconds)

BUTTONS = {0: "left", 1: "middle", 2: "right"}  # RFB mask bit -> button
WHEEL = {3: "up", 4: "down", 5: "left", 6: "right"}  # X buttons 4-7
CHORD_MODIFIERS = {0xFFE3: "ctrl", 0xFFE4: "rctrl", 0xFFE9: "alt", 0xFFEA: "ralt", 0xFFE7: "alt"}
CHORD_MODIFIERS |= {0xFFEB: "super", 0xFFEC: "rsuper", 0xFFE8: "ralt"}  # Meta_L/R: xkb's Alt
SHIFTS = {0xFFE1: "shift", 0xFFE2: "rshift"}
OTHER_MODIFIERS = {0xFE03, 0xFFE5, 0xFF7F}  # AltGr, Caps Lock, Num Lock: change the character only
SLOP = 4  # pixels a press may move and still be a click
DOUBLE_CLICK_S = 0.4
TEXT_PAUSE_S = 1.0  # typing that stops this long is one type_text
MAX_PATH = 200  # points of a drag kept (later moves replace the last)


def _point(x: int, y: int) -> dict[str, int]:
    return {"x": min(x, SCREEN.width - 1), "y": min(y, SCREEN.height - 1)}


class HumanInput:
    """Follows one interactive connection's input and records it as actions through ``record``.

    Held-back actions (text being typed, a click that may become a double click, scroll notches) go out
    after a pause: by a timer on ``loop`` when given, else on ``flush()``."""

    def __init__(self, record: Record, loop: asyncio.AbstractEventLoop | None = None) -> None:
        self._record, self._loop = record, loop
        self._stream: ClientStream | None = ClientStream()
        self._mask = 0
        self._held: dict[int, str] = {}  # modifier keysym -> key name, in the order pressed
        self._press: tuple[str, list[dict[str, int]], list[str], float] | None = None
        self._pending: dict[str, Any] | None = None  # an action still growing
        self._pending_at = 0.0  # when it started (epoch)
        self._pending_seen = 0.0  # when it last grew (monotonic)
        self._pause = TEXT_PAUSE_S  # how long it waits for more
        self._timer: asyncio.TimerHandle | None = None

    # ------------------------------------------------------------------------------------------ input
    def feed(self, data: bytes) -> None:
        """What the client sent (already forwarded); never raises."""
        if self._stream is None:
            return
        try:
            for chunk, is_message in self._stream.feed(data):
                if is_message and chunk[0] == 4:
                    self.key(*key_event(chunk))
                elif is_message and chunk[0] == 5:
                    self.pointer(*pointer_event(chunk))
        except ProtocolError as exc:  # keep forwarding; stop recording what cannot be followed
            log.warning("a human's VNC input is no longer recorded: %s", exc)
            self._stream = None

    def key(self, down: bool, keysym: int) -> None:
        modifier = CHORD_MODIFIERS.get(keysym) or SHIFTS.get(keysym)
        if modifier is not None or keysym in OTHER_MODIFIERS:
            if modifier is not None and down:
                self._held[keysym] = modifier
            elif modifier is not None:
                self._held.pop(keysym, None)
            return
        if not down:
            return
        char, name = keysym_char(keysym), key_name(keysym)
        chord = any(sym in CHORD_MODIFIERS for sym in self._held)
        if char is not None and not chord:
            self._grow("type_text", lambda a: a.update(text=a["text"] + char), {"text": char})
        elif name is not None and not self._held:
            self._grow("type_keys", lambda a: a["keys"].append(name), {"keys": [name]})
        elif name is not None:
            keys = [*self._held.values(), name]
            self.flush()
            now = time.time()
            self._record({"action": "press_keys", "keys": keys, "press": "down"}, now)
            self._record({"action": "press_keys", "keys": keys, "press": "up"}, now)

    def pointer(self, mask: int, x: int, y: int) -> None:
        pressed, released = mask & ~self._mask, self._mask & ~mask
        self._mask = mask
        if self._press is not None:
            self._move(x, y)
        for bit, direction in WHEEL.items():
            if pressed & (1 << bit):
                self._scroll(direction, x, y)
        for bit, button in BUTTONS.items():
            if pressed & (1 << bit) and self._press is None:
                if self._pending is not None and self._pending["action"] != "click_mouse":
                    self.flush()
                self._press = (button, [_point(x, y)], list(self._held.values()), time.time())
            elif released & (1 << bit) and self._press is not None and self._press[0] == button:
                self._release()

    # ---------------------------------------------------------------------------------------- gestures
    def _move(self, x: int, y: int) -> None:
        assert self._press is not None
        path, point = self._press[1], _point(x, y)
        if path[-1] != point:
            if len(path) >= MAX_PATH:
                path.pop()
            path.append(point)

    def _release(self) -> None:
        assert self._press is not None
        button, path, hold, started = self._press
        self._press = None
        start = path[0]
        far = max(max(abs(p["x"] - start["x"]), abs(p["y"] - start["y"])) for p in path)
        extra: dict[str, Any] = {"holdKeys": hold} if hold else {}
        if far > SLOP:
            self.flush()
            self._record({"action": "drag_mouse", "path": path, "button": button, **extra}, started)
            return
        last = self._pending
        if (
            last is not None
            and last["action"] == "click_mouse"
            and last["button"] == button
            and _near(last["coordinates"], start)
            and time.monotonic() - self._pending_seen <= DOUBLE_CLICK_S
            and last["clickCount"] < MAX_CLICKS
        ):
            last["clickCount"] += 1
            self._touch()
            return
        self.flush()
        click = {"action": "click_mouse", "coordinates": start, "button": button, "clickCount": 1, **extra}
        self._hold(click, started, DOUBLE_CLICK_S)

    def _scroll(self, direction: str, x: int, y: int) -> None:
        last, at = self._pending, _point(x, y)
        if (
            last is not None
            and last["action"] == "scroll"
            and last["direction"] == direction
            and _near(last["coordinates"], at)
            and last["scrollCount"] < MAX_SCROLLS
        ):
            last["scrollCount"] += 1
            self._touch()
            return
        self.flush()
        hold = list(self._held.values())
        scroll = {"action": "scroll", "coordinates": at, "direction": direction, "scrollCount": 1}
        self._hold({**scroll, **({"holdKeys": hold} if hold else {})}, time.time(), TEXT_PAUSE_S)

    def _grow(self, kind: str, grow: Callable[[dict[str, Any]], None], first: dict[str, Any]) -> None:
        if self._pending is not None and self._pending["action"] == kind:
            grow(self._pending)
            self._touch()
        else:
            self.flush()
            self._hold({"action": kind, **first}, time.time(), TEXT_PAUSE_S)

    # ---------------------------------------------------------------------------------- held back
    def _hold(self, action: dict[str, Any], started: float, pause: float) -> None:
        self._pending, self._pending_at = action, started
        self._pause = pause
        self._touch()

    def _touch(self) -> None:
        self._pending_seen = time.monotonic()
        if self._loop is not None:
            if self._timer is not None:
                self._timer.cancel()
            self._timer = self._loop.call_later(self._pause, self._expire)

    def _expire(self) -> None:
        if self._pending is not None and time.monotonic() - self._pending_seen >= self._pause - 0.01:
            self.flush()

    def flush(self) -> None:
        """Record the action held back, if any (the connection ends, or other input comes)."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        action, self._pending = self._pending, None
        if action is not None:
            self._record(action, self._pending_at)


def _near(a: dict[str, int], b: dict[str, int]) -> bool:
    return abs(a["x"] - b["x"]) <= SLOP and abs(a["y"] - b["y"]) <= SLOP
