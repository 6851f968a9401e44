"""Evidence of delivery, opt-in per input action (``evidence: true``): what the action demonstrably did, so
a client (an agent's model) can tell a click that hit something from one that hit nothing.

Read before and after the action, on the connections the action used: the focused window (id, title, class)
and the damage count, then the pointer where it ended. ``damaged`` is the bounding box of what was drawn in
between (read after a round trip on the damage connection; the panel clock's minutes are not the action's)
and ``screenChanged`` whether there is one; with ``settle`` they are read after settling, without it right
after the action, before an application may have redrawn. A keyboard action also says whether its keys had
somewhere to go (``keysDelivered``: the X input focus was a window, not None), and to which window
(``keysTo``); and, when the accessibility tree answers, whether the text element they went to changed
(``textChanged``: its length and a digest of its text, read by the hands before and after,
``accessibility.text_state``); absent when there is no such element or tree.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from deskpilot.desktop.x11.damage import Box, DamageWatcher
from deskpilot.desktop.x11.focus import Focus


@dataclass(frozen=True, slots=True)
class Before:
    focus: Focus | None
    changes: int | None  # the damage count, None without damage tracking
    text: dict[str, Any] | None = None  # the focused text element's state (keyboard actions, with a tree)


def changes(damage: DamageWatcher | None) -> int | None:
    return damage.poll(sync=True) if damage is not None and damage.alive else None


@dataclass(frozen=True, slots=True)
class After:
    focus: Focus | None
    pointer: tuple[int, int]
    changes: int | None
    damaged: Box | None = None
    keys: Focus | bool | None = False  # False: not a keyboard action
    text: dict[str, Any] | None = None  # the same element's state after (None: gone, or not asked)


def report(before: Before, after: After) -> dict[str, Any]:
    """The evidence after the action, against ``before``."""
    px, py = after.pointer
    out: dict[str, Any] = {
        "pointer": {"x": px, "y": py},
        "focusBefore": before.focus.to_dict() if before.focus else None,
        "focusAfter": after.focus.to_dict() if after.focus else None,
    }
    if before.changes is not None and after.changes is not None:
        box = after.damaged  # what the clock drew on its own is not the action's (``DamageWatcher``)
        out["screenChanged"] = box is not None
        out["damaged"] = (
            None
            if box is None
            else {"x": box[0], "y": box[1], "width": box[2] - box[0], "height": box[3] - box[1]}
        )
    if after.keys is not False:
        out["keysDelivered"] = after.keys is not None
        out["keysTo"] = after.keys.to_dict() if isinstance(after.keys, Focus) else None
    # of the element the keys went to: focused still (a focus that moved meanwhile says nothing of it)
    if before.text is not None and after.text is not None and after.text["focused"]:
        out["textChanged"] = after.text["digest"] != before.text["digest"]
    return out
