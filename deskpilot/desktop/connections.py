"""The service's X connections to the display it owns: input (XTest, EWMH), capture and the clipboard.

Each is opened on first use, and only to the display the service was configured to own: the contract's
screen (``SCREEN``) at depth 24, served by ``DESKTOP_DISPLAY_OWNER`` when that is set. Any other display is
refused with ``UnsupportedDisplay`` on every display action (logged once). If the X server goes away, every
display action raises ``DisplayLost`` (503 + Retry-After) and all three connections are dropped; the next
request reconnects, so a restarted Xvfb is picked up without a restart. No other failure drops them.
"""

from __future__ import annotations

import contextlib
import logging
import pwd
import threading
from collections.abc import Callable, Iterator
from typing import Any, Generic, Protocol, TypeVar

from deskpilot.computer.fields import ScreenshotOptions
from deskpilot.computer.geometry import SCREEN
from deskpilot.config import DesktopSettings
from deskpilot.desktop.capture import WHOLE, Capturer, Image
from deskpilot.desktop.x11.clipboard import Clipboard
from deskpilot.desktop.x11.connection import XConnection
from deskpilot.desktop.x11.damage import DamageWatcher
from deskpilot.desktop.x11.server import Owner, Requirements, lost_display
from deskpilot.errors import DisplayLost, UnsupportedDisplay

log = logging.getLogger(__name__)


class _Closable(Protocol):
    def close(self) -> None: ...


C = TypeVar("C", bound=_Closable)


class _Slot(Generic[C]):
    """One connection, opened on first use. The lock guards the reference only, never the I/O of opening or
    closing: a hanging X server blocks the thread that talks to it, not the others."""

    def __init__(self, opener: Callable[[], C], usable: Callable[[C], bool] = lambda _: True) -> None:
        self._opener, self._usable = opener, usable
        self._conn: C | None = None
        self._lock = threading.Lock()

    def peek(self) -> C | None:
        return self._conn

    def get(self) -> C:
        current = self._conn
        if current is not None and self._usable(current):
            return current
        fresh = self._opener()
        with self._lock:
            if self._conn is None or self._conn is current:
                stale, self._conn = current, fresh
            else:  # another thread opened one meanwhile: use theirs
                stale, fresh = fresh, self._conn
        _close(stale)
        return fresh

    def take(self) -> C | None:
        with self._lock:
            conn, self._conn = self._conn, None
        return conn


def _close(conn: _Closable | None) -> None:
    if conn is not None:
        with contextlib.suppress(Exception):  # the server may be gone already
            conn.close()


def requirements(settings: DesktopSettings) -> Requirements:
    owner = None
    if settings.display_owner:
        try:
            owner = Owner(settings.display_owner, pwd.getpwnam(settings.display_owner).pw_uid)
        except KeyError:
            raise RuntimeError(f"DESKTOP_DISPLAY_OWNER={settings.display_owner!r} is no user") from None
    return Requirements(SCREEN.width, SCREEN.height, 24, owner)


class Connections:
    def __init__(self, settings: DesktopSettings) -> None:
        self.name = settings.display
        self.required = requirements(settings)
        self._input = _Slot(lambda: self._open(XConnection), usable=lambda x: not x.severed)
        self._capture = _Slot(lambda: self._open(Capturer))
        self._clipboard = _Slot(lambda: self._open(Clipboard), usable=lambda clip: clip.alive)
        self._refusal: str | None = None  # the refusal logged last, so it is logged once

    def close(self) -> None:
        self.drop()

    def drop(self) -> None:
        slots: tuple[_Slot[Any], ...] = (self._input, self._capture, self._clipboard)
        for slot in slots:
            _close(slot.take())

    @contextlib.contextmanager
    def using(self) -> Iterator[XConnection]:
        """The input connection, for a block of X calls on the event loop."""
        with self._drop_if_lost(), lost_display(self.name):
            yield self._input.get()

    def clipboard(self) -> Clipboard:
        with self._drop_if_lost():
            return self._clipboard.get()

    def capture(self, options: ScreenshotOptions | None = None) -> Image:
        """Synchronous capture + encode (run it in a worker thread)."""
        with self._drop_if_lost():
            return self._capture.get().screenshot(options or WHOLE)

    def again(self, options: ScreenshotOptions) -> Image | None:
        """The screenshot the capture connection would serve again, if it is open and not busy, else None
        (``Capturer.again``: one round trip, so callers may run it on the event loop)."""
        capturer = self._capture.peek()
        if capturer is None:
            return None
        with self._drop_if_lost():
            return capturer.again(options)

    def damage(self) -> DamageWatcher | None:
        """The capture connection's damage watcher (opening it if needed; blocking: run it off the loop)."""
        with self._drop_if_lost():
            return self._capture.get().damage

    @property
    def capture_path(self) -> str | None:
        """How screenshots are taken ("shm" or "getimage") once the capture connection is open, else None."""
        capturer = self._capture.peek()
        return capturer.path if capturer is not None else None

    def check(self) -> None:
        """The display probe, blocking (run it off the event loop): the capture connection, opened if
        needed, makes one round trip to the server."""
        with self._drop_if_lost():
            self._capture.get().ping()

    @contextlib.contextmanager
    def _drop_if_lost(self) -> Iterator[None]:
        try:
            yield
        except DisplayLost:
            self.drop()
            raise

    def _open(self, kind: Callable[[str, Requirements], C]) -> C:
        try:
            conn = kind(self.name, self.required)
        except UnsupportedDisplay as exc:
            if exc.message != self._refusal:
                self._refusal = exc.message
                log.error("display refused", extra={"display": self.name, "error": exc.message})
            raise
        if self._refusal is not None:
            self._refusal = None
            log.info("display accepted", extra={"display": self.name})
        return conn
