"""XFixes regions: where exactly the screen was drawn on, not just the bounding box of it.

DAMAGE at level BoundingBox (deskpilot/desktop/x11/damage.py) tells the bounding box of what was drawn
since the last ``DamageSubtract``: two pixels in opposite corners are the whole screen. ``DamageSubtract``
can hand the server's damage region to an XFixes region instead (its ``parts``), and ``FetchRegion`` reads
that region's rectangles back: one round trip, asked for only when the box is tall enough to matter.
python-xlib has no region requests: the two this needs are below (XFixes 2.0). The region lasts as long as
the connection.
"""

from __future__ import annotations

from Xlib import display as xdisplay
from Xlib.protocol import rq

Rect = tuple[int, int, int, int]  # x, y, width, height


class _CreateRegion(rq.Request):
    _request = rq.Struct(
        rq.Card8("opcode"),
        rq.Opcode(5),
        rq.RequestLength(),
        rq.Card32("region"),
        rq.List("rectangles", rq.Card32),  # none: an empty region
    )


_RECTANGLE = rq.Struct(rq.Int16("x"), rq.Int16("y"), rq.Card16("width"), rq.Card16("height"))


class _FetchRegion(rq.ReplyRequest):
    _request = rq.Struct(rq.Card8("opcode"), rq.Opcode(19), rq.RequestLength(), rq.Card32("region"))
    _reply = rq.Struct(
        rq.ReplyCode(),
        rq.Pad(1),
        rq.Card16("sequence_number"),
        rq.ReplyLength(),
        rq.Object("extents", _RECTANGLE),
        rq.Pad(16),
        rq.List("rectangles", _RECTANGLE),  # the rest of the reply (the reply's length counts them)
    )


class ServerRegion:
    """An empty XFixes region of our own connection, for ``DamageSubtract``'s ``parts``; None from
    ``create`` when the server has no XFixes 2."""

    def __init__(self, display: xdisplay.Display, opcode: int, rid: int) -> None:
        self._display, self._opcode, self.id = display, opcode, rid

    @classmethod
    def create(cls, display: xdisplay.Display) -> ServerRegion | None:
        if not display.has_extension("XFIXES"):
            return None
        if display.xfixes_query_version().major_version < 2:  # the server serves regions after this only
            return None
        opcode = display.display.get_extension_major("XFIXES")
        rid = display.display.allocate_resource_id()
        _CreateRegion(display=display.display, opcode=opcode, region=rid, rectangles=[])
        return cls(display, opcode, rid)

    def rectangles(self) -> list[Rect]:
        """Its rectangles (banded: sorted by rows, then columns, none overlapping); a round trip."""
        reply = _FetchRegion(display=self._display.display, opcode=self._opcode, region=self.id)
        return [(r.x, r.y, r.width, r.height) for r in reply.rectangles]
