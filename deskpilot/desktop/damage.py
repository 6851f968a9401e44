"""What changed on the screen, and when: the X server's DAMAGE extension on the root window.

The server reports drawing into the root window and its inferiors (every window) on a connection of our
own: at level NonEmpty it sends one event when the damaged region stops being empty, and we empty it again,
so each burst of drawing costs one event and one request. ``changes`` counts them, ``last_change`` is when
the latest was read.

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

from Xlib.ext import damage

from deskpilot.desktop.x11 import Requirements, open_display

log = logging.getLogger(__name__)


class DamageWatcher:
    def __init__(self, name: str, required: Requirements) -> None:
        self.display = open_display(name, required)
        try:
            if not self.display.has_extension("DAMAGE"):
                raise RuntimeError(f"{name} has no DAMAGE extension")
            self.display.damage_query_version()  # the protocol wants it before any other request
            self._damage = self.display.screen().root.damage_create(damage.DamageReportNonEmpty)
            self.display.sync()
        except BaseException:
            self.display.close()
            raise
        self.changes = 0
        self.last_change = time.monotonic()
        self.alive = True
        self._lock = threading.Lock()

    def poll(self, sync: bool = False) -> int:
        """Count the events that arrived (after a round trip with ``sync``); the count so far. Raises the
        X connection's errors (a lost display)."""
        with self._lock:
            if sync:
                self.display.sync()
            seen = 0
            while self.display.pending_events():
                self.display.next_event()
                seen += 1
            if seen:
                self.changes += seen
                self.last_change = time.monotonic()
                self.display.damage_subtract(self._damage)
                self.display.flush()
            return self.changes

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
