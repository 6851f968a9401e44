"""The clipboard of the desktop service: it owns CLIPBOARD and PRIMARY and serves paste requests.

The selection owner runs on its own X connection and thread (python-xlib is not safe to share across
threads): a client that pastes asks the owner for the text, and the owner must answer at any time. The
event loop hands it a text and awaits the ownership without blocking (``offer``).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import queue
import select
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from Xlib import X, Xatom, error
from Xlib import display as xdisplay
from Xlib.protocol import event as xevent

from deskpilot.desktop.x11.server import (
    LOST_CONNECTION,
    Requirements,
    display_lost,
    open_display,
)
from deskpilot.errors import ClipboardBusy, DesktopError

OFFER_TIMEOUT_S = 2.0
# Ends the clipboard thread: the connection is gone (select() on a closed socket fails with OSError or,
# once python-xlib has dropped the socket, ValueError).
_THREAD_ENDS: tuple[type[BaseException], ...] = (*LOST_CONNECTION, OSError, ValueError)

Settle = Callable[[DesktopError | None], None]  # called on the clipboard thread with the offer's outcome


@dataclass
class Paste:
    """Progress of one paste: when the text was handed to a client, and whether it has read it."""

    written_at: float = 0.0
    consumed: threading.Event = field(default_factory=threading.Event)


class Clipboard:
    """Owns CLIPBOARD (and PRIMARY) on its own X connection and serves paste requests from a thread.

    ``await offer(text)`` takes ownership and returns a ``Paste``: ``written_at`` is set once a client asked
    for the text and got it, ``consumed`` once it also deleted the property as ICCCM asks (it has read it),
    which is how ``paste_text`` knows the paste happened. Large texts go out with the INCR protocol.
    Only the clipboard thread touches its X connection (python-xlib is not safe to share across threads);
    ``offer`` hands the text over through a queue and a wake-up pipe.
    """

    CHUNK = 65536

    def __init__(self, name: str, required: Requirements) -> None:
        self.name = name
        self.display = open_display(name, required, self._setup)
        self._stop = False
        self._offers: queue.SimpleQueue[tuple[bytes, Paste, Settle]] = queue.SimpleQueue()
        self._wake_r, self._wake_w = os.pipe()
        self._thread = threading.Thread(target=self._serve, name="x11-clipboard", daemon=True)
        self._thread.start()

    def _setup(self, display: xdisplay.Display) -> None:
        self.display = display
        root = self.display.screen().root
        self.win = root.create_window(-10, -10, 1, 1, 0, X.CopyFromParent, event_mask=X.PropertyChangeMask)
        atoms = [
            "CLIPBOARD",
            "PRIMARY",
            "TARGETS",
            "UTF8_STRING",
            "TEXT",
            "INCR",
            "TIMESTAMP",
            "text/plain;charset=utf-8",
            "text/plain",
        ]
        self.atoms = {n: self.display.intern_atom(n) for n in atoms}
        self.atoms["STRING"] = Xatom.STRING
        self.display.sync()
        self._data = b""
        self._paste = Paste()
        self._reading: set[tuple[int, int]] = set()  # (requestor, property) written, not yet deleted
        self._incr: dict[tuple[int, int], memoryview] = {}
        self._incr_kind = self.atoms["UTF8_STRING"]

    async def offer(self, text: str) -> Paste:
        """Put ``text`` on the clipboard: ``ClipboardBusy`` if the thread has not taken the selection within
        ``OFFER_TIMEOUT_S`` (the X server is busy), ``DisplayLost`` if the display went away."""
        loop = asyncio.get_running_loop()
        owned: asyncio.Future[None] = loop.create_future()

        def settle(failure: DesktopError | None) -> None:
            with contextlib.suppress(RuntimeError):  # the loop is closed: nobody waits any more
                loop.call_soon_threadsafe(_settle, owned, failure)

        paste = Paste()
        self._offers.put((text.encode("utf-8"), paste, settle))
        os.write(self._wake_w, b"o")
        try:
            async with asyncio.timeout(OFFER_TIMEOUT_S):
                await owned
        except TimeoutError:
            raise ClipboardBusy(
                f"the desktop did not let the service take the clipboard within {OFFER_TIMEOUT_S:g} s; retry"
            ) from None
        return paste

    def close(self) -> None:
        self._stop = True
        with contextlib.suppress(OSError):
            os.write(self._wake_w, b"q")
        self._thread.join(timeout=2)
        with contextlib.suppress(*LOST_CONNECTION):
            self.display.close()
        for fd in (self._wake_r, self._wake_w):
            with contextlib.suppress(OSError):
                os.close(fd)

    @property
    def alive(self) -> bool:
        return self._thread.is_alive()

    def _serve(self) -> None:
        try:
            while not self._stop:
                ready, _, _ = select.select([self.display.fileno(), self._wake_r], [], [], 0.5)
                if self._wake_r in ready:
                    os.read(self._wake_r, 64)
                while not self._offers.empty():
                    self._own(*self._offers.get_nowait())
                while self.display.pending_events():
                    ev = self.display.next_event()
                    if isinstance(ev, xevent.SelectionRequest):
                        self._answer(ev)
                    elif ev.type == X.PropertyNotify and ev.state == X.PropertyDelete:
                        self._deleted(ev.window.id, ev.atom)
        except _THREAD_ENDS as exc:
            lost = display_lost(self.name, f"{type(exc).__name__}: {exc}")
            while not self._offers.empty():
                self._offers.get_nowait()[2](lost)

    def _own(self, data: bytes, paste: Paste, settle: Settle) -> None:
        self._data, self._paste, self._incr = data, paste, {}
        self._reading.clear()
        try:
            for sel in ("CLIPBOARD", "PRIMARY"):
                self.win.set_selection_owner(self.atoms[sel], X.CurrentTime)
            owner = self.display.get_selection_owner(self.atoms["CLIPBOARD"])
        except _THREAD_ENDS as exc:
            settle(display_lost(self.name, f"{type(exc).__name__}: {exc}"))
            raise
        if owner == self.win:
            settle(None)
        else:
            settle(ClipboardBusy("another program took the clipboard at the same moment; retry"))

    def _answer(self, ev: xevent.SelectionRequest) -> None:
        prop = ev.property or ev.target
        requestor = ev.requestor
        atom = self.atoms
        text_targets = (atom["UTF8_STRING"], atom["TEXT"], atom["text/plain;charset=utf-8"])
        try:
            if ev.target == atom["TARGETS"]:
                plain = (atom["STRING"], atom["text/plain"])
                targets = [atom["TARGETS"], atom["TIMESTAMP"], *text_targets, *plain]
                requestor.change_property(prop, Xatom.ATOM, 32, targets)
            elif ev.target == atom["TIMESTAMP"]:
                requestor.change_property(prop, Xatom.INTEGER, 32, [X.CurrentTime])
            elif ev.target in (*text_targets, atom["STRING"], atom["text/plain"]):
                data = self._data
                if ev.target in (atom["STRING"], atom["text/plain"]):
                    data = data.decode("utf-8").encode("latin-1", "replace")
                kind = atom["UTF8_STRING"] if ev.target != atom["STRING"] else atom["STRING"]
                if len(data) > self.CHUNK:
                    requestor.change_attributes(event_mask=X.PropertyChangeMask)
                    self._incr[(requestor.id, prop)] = memoryview(data)
                    self._incr_kind = kind
                    requestor.change_property(prop, atom["INCR"], 32, [len(data)])
                else:
                    requestor.change_attributes(event_mask=X.PropertyChangeMask)
                    self._reading.add((requestor.id, prop))
                    requestor.change_property(prop, kind, 8, data)
                    self._paste.written_at = time.monotonic()
            else:
                prop = X.NONE
        except error.XError:
            prop = X.NONE
        notify = xevent.SelectionNotify(
            time=ev.time, requestor=requestor, selection=ev.selection, target=ev.target, property=prop
        )
        requestor.send_event(notify)
        self.display.flush()

    def _deleted(self, window: int, prop: int) -> None:
        win = self.display.create_resource_object("window", window)
        if (window, prop) in self._reading:  # the requestor has read the text
            self._reading.discard((window, prop))
            win.change_attributes(event_mask=0)
            self._paste.consumed.set()
            return
        rest = self._incr.get((window, prop))
        if rest is None:
            return
        chunk, rest = rest[: self.CHUNK], rest[self.CHUNK :]
        win.change_property(prop, self._incr_kind, 8, bytes(chunk))
        if len(chunk):
            self._incr[(window, prop)] = rest
        else:
            del self._incr[(window, prop)]
            win.change_attributes(event_mask=0)
            self._paste.consumed.set()
        self.display.flush()


def _settle(owned: asyncio.Future[None], failure: DesktopError | None) -> None:
    """On the event loop: the outcome of an offer, unless its caller stopped waiting."""
    if owned.done():
        return
    if failure is None:
        owned.set_result(None)
    else:
        owned.set_exception(failure)
