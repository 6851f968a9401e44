"""Evidence of delivery, opt-in per input action (``evidence: true``): what the action demonstrably did, so
a client (an agent's model) can tell a click that hit something from one that hit nothing.

Read before and after the action, on the connections the action used: the focused window (id, title, class)
and the damage count, then the pointer where it ended. ``screenChanged`` compares the damage counts after a
round trip on the damage connection, and ``damaged`` is the bounding box of what was drawn in between; with
``settle`` they are read after settling, without it right after the action, before an application may have
redrawn. A keyboard action also says whether its keys had somewhere to go (``keysDelivered``: the X input
focus was a window, not None), and to which window (``keysTo``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from Xlib import X, error

from deskpilot.desktop.damage import Box, DamageWatcher
from deskpilot.desktop.x11 import XConnection


@dataclass(frozen=True, slots=True)
class Focus:
    id: int
    title: str
    wm_class: str

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "title": self.title, "class": self.wm_class}


@dataclass(frozen=True, slots=True)
class Before:
    focus: Focus | None
    changes: int | None  # the damage count, None without damage tracking


def focused(x: XConnection) -> Focus | None:
    """The active window (EWMH), or None when none is."""
    wid = x.active_window()
    if not wid:
        return None
    window = x.display.create_resource_object("window", wid)
    try:
        prop = window.get_full_property(x.atom("_NET_WM_NAME"), x.atom("UTF8_STRING"))
        title = prop.value.decode(errors="replace") if prop else str(window.get_wm_name() or "")
    except error.XError:  # gone meanwhile
        return None
    return Focus(wid, title, x.wm_class(wid)[1])


def changes(damage: DamageWatcher | None) -> int | None:
    return damage.poll(sync=True) if damage is not None and damage.alive else None


def keys_to(x: XConnection) -> Focus | None:
    """Where key events go now: the active window when there is one, else the X input focus window (or the
    one under the pointer, id 0, in PointerRoot mode); None when the focus is None and keys are lost."""
    focus = x.display.get_input_focus().focus
    if isinstance(focus, int) and focus == X.NONE:
        return None
    active = focused(x)
    if active is not None:
        return active
    wid = 0 if isinstance(focus, int) else int(focus.id)
    return Focus(wid, "", x.wm_class(wid)[1] if wid else "")


@dataclass(frozen=True, slots=True)
class After:
    focus: Focus | None
    pointer: tuple[int, int]
    changes: int | None
    damaged: Box | None = None
    keys: Focus | bool | None = False  # False: not a keyboard action


def report(before: Before, after: After) -> dict[str, Any]:
    """The evidence after the action, against ``before``."""
    px, py = after.pointer
    out: dict[str, Any] = {
        "pointer": {"x": px, "y": py},
        "focusBefore": before.focus.to_dict() if before.focus else None,
        "focusAfter": after.focus.to_dict() if after.focus else None,
    }
    if before.changes is not None and after.changes is not None:
        out["screenChanged"] = after.changes != before.changes
        box = after.damaged
        out["damaged"] = (
            None
            if box is None
            else {"x": box[0], "y": box[1], "width": box[2] - box[0], "height": box[3] - box[1]}
        )
    if after.keys is not False:
        out["keysDelivered"] = after.keys is not None
        out["keysTo"] = after.keys.to_dict() if isinstance(after.keys, Focus) else None
    return out
