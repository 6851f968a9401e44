"""The service's X connections to its display: input (XTest, EWMH), capture (MIT-SHM) and the clipboard.

Each is opened on first use. If the X server goes away every display action raises ``DisplayUnavailable``
(503 + Retry-After) and the connections are dropped; the next request reconnects, so a restarted Xvfb is
picked up without a restart.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator

from app.desktop.capture import Capturer, Image
from app.desktop.clipboard import Clipboard
from app.desktop.x11 import CONNECTION_ERRORS, XConnection
from app.errors import DisplayUnavailable


class Connections:
    def __init__(self, display: str) -> None:
        self.display = display
        self._input: XConnection | None = None
        self._capture: Capturer | None = None
        self._clipboard: Clipboard | None = None
        self._lock = threading.Lock()

    def close(self) -> None:
        self.drop()

    def drop(self) -> None:
        with self._lock:
            opened = (self._input, self._capture, self._clipboard)
            self._input = self._capture = self._clipboard = None
        for conn in opened:
            if conn is not None:
                with contextlib.suppress(Exception):
                    conn.close()

    def _unavailable(self, exc: BaseException) -> DisplayUnavailable:
        self.drop()
        return DisplayUnavailable(
            f"the X display {self.display} is not available ({type(exc).__name__}: {exc}); retry in a moment"
        )

    @contextlib.contextmanager
    def using(self) -> Iterator[XConnection]:
        """The input connection, for a block of X calls on the event loop."""
        try:
            with self._lock:
                if self._input is None:
                    self._input = XConnection(self.display)
                x = self._input
            yield x
        except CONNECTION_ERRORS as exc:
            raise self._unavailable(exc) from None

    def clipboard(self) -> Clipboard:
        with self._lock:
            if self._clipboard is None or not self._clipboard.alive:
                self._clipboard = Clipboard(self.display)
            return self._clipboard

    def capture(
        self, fmt: str = "png", quality: int = 80, width: int | None = None, scale: float | None = None
    ) -> Image:
        """Synchronous capture + encode (run in a worker thread)."""
        try:
            with self._lock:
                if self._capture is None:
                    self._capture = Capturer(self.display)
                cap = self._capture
            return cap.screenshot(fmt, quality, width, scale)
        except CONNECTION_ERRORS as exc:
            raise self._unavailable(exc) from None

    def display_ok(self) -> bool:
        """Cheap health probe: one round trip on the input connection (reconnects if it was lost)."""
        try:
            with self.using() as x:
                x.ping()
            return True
        except DisplayUnavailable:
            return False
