"""What changed on the screen, and when: the X server's DAMAGE extension on the root window.

The server reports drawing into the root window and its inferiors (every window) on a connection of our
own: at level BoundingBox it sends an event when the damaged region stops being empty or its bounding box
grows, and we empty it again, so a burst of drawing costs an event or a few and one request. ``changes``
counts them, ``last_change`` is when the latest was read, and the boxes of the last events tell where the
screen changed since a given count (``damaged_since``: evidence of what an action redrew).

The panel clock draws on its own once a minute: what an action drew (``damaged_since``, and so a settle's
drawings and the evidence) leaves out a box wholly inside it, while the capture cache (``rows_since``) counts
it like any other, a frame showing the screen as it is.

``poll(sync=True)`` makes a round trip on this same connection first: the server sends an event before the
reply to any request it processed after the drawing, so once the reply is in, every drawing that happened
before the call has been counted. That is what lets a screenshot be served again safely. Reading is
non-blocking; one lock serialises the connection.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections import deque

from Xlib import X, error
from Xlib.ext import damage
from Xlib.protocol import event

from deskpilot.computer.geometry import Size, clock
from deskpilot.desktop.x11.server import Requirements, open_display

log = logging.getLogger(__name__)

Box = tuple[int, int, int, int]  # x0, y0, x1, y1 (exclusive)
KEPT_BOXES = 512  # the boxes of the latest events, for ``damaged_since`` and ``rows_since``
JOIN_ROWS = 32  # rows drawn on closer than this are one band: each band costs a request and a margin
MAX_BANDS = 4
KEPT_PINGS = 64  # the answers of the latest pings kept; an older one is never waited for
# A top-level window mapped, unmapped, moved, resized, restacked or reparented: the server paints its frame's
# background and moves window contents by their bit gravity itself, and DAMAGE does not report all of it (a
# maximised xfce4-terminal's first title and menu bar never were, so frames lacked them for good): the whole
# screen counts as drawn.
RESTRUCTURED = frozenset(
    {X.MapNotify, X.UnmapNotify, X.ConfigureNotify, X.ReparentNotify, X.GravityNotify, X.CirculateNotify}
)


class DamageWatcher:
    def __init__(self, name: str, required: Requirements) -> None:
        self.display = open_display(name, required)
        try:
            if not self.display.has_extension("DAMAGE"):
                raise RuntimeError(f"{name} has no DAMAGE extension")
            self.display.damage_query_version()  # the protocol wants it before any other request
            info = self.display.query_extension("DAMAGE")
            notify = (info.first_event if info else 0) + damage.DamageNotifyCode
            root = self.display.screen().root
            self._damage = root.damage_create(damage.DamageReportBoundingBox)
            # the answers to our _NET_WM_PINGs are sent to the root: for its substructure's listeners by GTK,
            # for its structure's by Qt
            root.change_attributes(event_mask=X.SubstructureNotifyMask | X.StructureNotifyMask)
            self._protocols = self.display.intern_atom("WM_PROTOCOLS")
            self._ping = self.display.intern_atom("_NET_WM_PING")
            self.display.sync()
        except BaseException:
            self.display.close()
            raise
        self._notify = notify  # python-xlib registers a class of its own per display: compare codes
        self.changes = 0
        self.last_change = time.monotonic()
        self.pings = 0  # the serial of the last ping sent
        self.answers: dict[int, float] = {}  # when each of the latest pings was answered, by serial
        self.alive = True
        self._lock = threading.Lock()
        self._boxes: deque[tuple[int, Box]] = deque(maxlen=KEPT_BOXES)  # (its count, its box)
        root = self.display.screen()
        self._screen: Box = (0, 0, root.width_in_pixels, root.height_in_pixels)
        x, y, w, h = clock(Size(root.width_in_pixels, root.height_in_pixels))
        self._clock: Box = (x, y, x + w, y + h)

    def poll(self, sync: bool = False) -> int:
        """Count the events that arrived (after a round trip with ``sync``); the count so far. Raises the
        X connection's errors (a lost display)."""
        with self._lock:
            if sync:
                self.display.sync()
            events = drawn = 0
            while self.display.pending_events():
                event = self.display.next_event()
                if event.type in RESTRUCTURED:
                    box = self._screen  # see RESTRUCTURED
                elif event.type == self._notify:
                    events += 1
                    area = event.area
                    if area.width == 0 or area.height == 0:
                        continue  # an empty box (the server's own cursor bookkeeping): no pixel changed
                    box = (area.x, area.y, area.x + area.width, area.y + area.height)
                else:
                    self._pong(event)
                    continue
                drawn += 1
                self._boxes.append((self.changes + drawn, box))
            if drawn:
                self.changes += drawn
                self.last_change = time.monotonic()
            if events:
                self.display.damage_subtract(self._damage)
                self.display.flush()
            return self.changes

    def ping(self, wid: int) -> int:
        """Send _NET_WM_PING to the client of window ``wid`` (EWMH: the client sends it back to the root when
        its event loop reads it, so the input events queued before it have been read too); its serial, 0 when
        the window does not take pings (or is gone)."""
        with self._lock:
            window = self.display.create_resource_object("window", wid)
            try:
                if self._ping not in (window.get_wm_protocols() or ()):
                    return 0
            except error.XError:
                return 0
            self.pings += 1
            message = event.ClientMessage(
                window=window, client_type=self._protocols, data=(32, [self._ping, self.pings, wid, 0, 0])
            )
            window.send_event(message, onerror=error.CatchError())
            self.display.flush()
            return self.pings

    def _pong(self, message: object) -> None:
        if not isinstance(message, event.ClientMessage) or message.client_type != self._protocols:
            return
        fmt, data = message.data
        if fmt == 32 and data[0] == self._ping and self.pings - KEPT_PINGS < data[1] <= self.pings:
            self.answers[int(data[1])] = time.monotonic()
            if len(self.answers) > KEPT_PINGS:
                del self.answers[min(self.answers)]

    def answered(self, pings: tuple[int, ...]) -> float | None:
        """When the last of ``pings`` was answered, None while one is not (as of the last poll)."""
        times = [self.answers.get(serial) for serial in pings]
        return None if None in times else max(t for t in times if t is not None)

    def damaged_since(self, mark: int) -> Box | None:
        """The bounding box of what was drawn after the count was ``mark`` (as of the last poll) but for the
        clock's minutes, None if nothing was; the whole screen when that is older than the boxes kept."""
        boxes = [box for box in self._since(mark) if not self._in_clock(box)]
        if not boxes:
            return None
        return (
            min(b[0] for b in boxes),
            min(b[1] for b in boxes),
            max(b[2] for b in boxes),
            max(b[3] for b in boxes),
        )

    def rows_since(self, mark: int) -> list[tuple[int, int]]:
        """The rows drawn on after the count was ``mark`` (as of the last poll), as sorted intervals (first,
        last + 1); those less than ``JOIN_ROWS`` apart are joined, and more than ``MAX_BANDS`` become one; the
        whole screen's when that is older than the boxes kept, none when nothing was drawn."""
        spans = sorted((box[1], box[3]) for box in self._since(mark))
        joined = spans[:1]
        for top, bottom in spans[1:]:
            if top - joined[-1][1] < JOIN_ROWS:
                joined[-1] = (joined[-1][0], max(joined[-1][1], bottom))
            else:
                joined.append((top, bottom))
        return joined if len(joined) <= MAX_BANDS else [(joined[0][0], max(b for _, b in joined))]

    def _since(self, mark: int) -> list[Box]:
        """The boxes drawn after the count was ``mark``: none, or the whole screen's when they are older than
        the boxes kept."""
        with self._lock:
            if self.changes <= mark:
                return []
            if not self._boxes or self._boxes[0][0] > mark + 1:
                return [self._screen]
            since: list[Box] = []
            for count, box in reversed(self._boxes):  # the latest first: a settle's look wants the last few
                if count <= mark:
                    break
                since.append(box)
            return since

    def _in_clock(self, box: Box) -> bool:
        x0, y0, x1, y1 = self._clock
        return box[0] >= x0 and box[1] >= y0 and box[2] <= x1 and box[3] <= y1

    def quiet_seconds(self) -> float:
        """Seconds since the last drawing this connection has been told of."""
        self.poll()
        return time.monotonic() - self.last_change

    def close(self) -> None:
        self.alive = False
        with contextlib.suppress(Exception):
            self.display.close()


def open_watcher(name: str, required: Requirements) -> DamageWatcher | None:
    """A watcher, or None (logged) where the server has no DAMAGE: then nothing is cached or settled by it."""
    try:
        return DamageWatcher(name, required)
    except RuntimeError as exc:
        log.warning("no damage tracking: every screenshot is captured afresh", extra={"error": str(exc)})
        return None
