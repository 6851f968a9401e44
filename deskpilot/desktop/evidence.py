"""Evidence of delivery, opt-in per input action (``evidence: true``): what the action demonstrably did, so
a client (an agent's model) can tell a click that hit something from one that hit nothing.

Read before and after the action, on the connections the action used: the focused window (id, title, class)
and the damage count, then the pointer where it ended. ``screenChanged`` compares the damage counts after a
round trip on the damage connection; with ``settle`` it is read after settling, without it right after the
action, before an application may have redrawn.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from Xlib import error

from deskpilot.desktop.damage import DamageWatcher
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


def report(before: Before, after: Focus | None, pointer: tuple[int, int], now: int | None) -> dict[str, Any]:
    """The evidence after the action, against ``before``."""
    px, py = pointer
    out: dict[str, Any] = {
        "pointer": {"x": px, "y": py},
        "focusBefore": before.focus.to_dict() if before.focus else None,
        "focusAfter": after.to_dict() if after else None,
    }
    if before.changes is not None and now is not None:
        out["screenChanged"] = now != before.changes
    return out
