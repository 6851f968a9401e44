"""The X connection of the desktop service: XTest input, the keymap, EWMH windows and the clipboard.

This module and ``capture.py`` are the only ones that import Xlib. Every call is synchronous and fast
(XTest costs ~0.1 ms per event); callers serialise input themselves. A lost X server surfaces as one of
``CONNECTION_ERRORS``; the controller then drops the connection and opens a new one later.
"""

from __future__ import annotations

import contextlib
import os
import queue
import select
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, field

from Xlib import XK, X, Xatom, error
from Xlib import display as xdisplay
from Xlib.ext import xtest
from Xlib.protocol import event as xevent

CONNECTION_ERRORS: tuple[type[BaseException], ...] = (
    error.ConnectionClosedError,
    error.DisplayError,
    OSError,
    EOFError,
)

BUTTONS = {"left": 1, "middle": 2, "right": 3}
SCROLL_BUTTONS = {"up": 4, "down": 5, "left": 6, "right": 7}


def open_display(name: str) -> xdisplay.Display:
    try:
        return xdisplay.Display(name)
    except CONNECTION_ERRORS:
        raise
    except Exception as exc:  # python-xlib raises bare Exceptions for some auth/handshake failures
        raise error.DisplayConnectionError(name, str(exc)) from exc


class XConnection:
    """One X client connection used for input and window management."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.d = open_display(name)
        if not self.d.has_extension("XTEST"):
            self.d.close()
            raise error.DisplayConnectionError(name, "the X server has no XTEST extension")
        self.root = self.d.screen().root
        self.width = self.d.screen().width_in_pixels
        self.height = self.d.screen().height_in_pixels
        self._atoms: dict[str, int] = {}
        info = self.d.display.info
        self._min_kc, self._max_kc = info.min_keycode, info.max_keycode
        self._load_keymap()
        self._shift = self.d.keysym_to_keycode(XK.XK_Shift_L)
        # scratch keycodes (no keysym bound) hold characters missing from the layout; LRU so a keycode is
        # not rebound while a client may still be translating an earlier press of it
        self._scratch: OrderedDict[int, int] = OrderedDict((kc, 0) for kc in self._spare_keycodes())

    def close(self) -> None:
        try:
            self._restore_scratch()
            self.d.close()
        except CONNECTION_ERRORS:
            pass

    # ------------------------------------------------------------------ basics
    def atom(self, name: str) -> int:
        a = self._atoms.get(name)
        if a is None:
            a = self._atoms[name] = self.d.intern_atom(name)
        return a

    def sync(self) -> None:
        self.d.sync()

    def ping(self) -> None:
        self.d.get_input_focus()

    def pointer(self) -> tuple[int, int]:
        p = self.root.query_pointer()
        return p.root_x, p.root_y

    def pointer_grabbed(self) -> bool:
        """True while another client holds the pointer, e.g. xfwm4's passive grab on Button1 that freezes a
        click until the WM has handled it and replays it (two round trips; a free pointer is grabbed by us
        for an instant, which sends the window under it a NotifyGrab/NotifyUngrab crossing pair)."""
        status = self.root.grab_pointer(
            False, 0, X.GrabModeAsync, X.GrabModeAsync, X.NONE, X.NONE, X.CurrentTime
        )
        if status == X.GrabSuccess:
            self.d.ungrab_pointer(X.CurrentTime)
            return False
        return True

    # ------------------------------------------------------------------ XTest input
    def move(self, x: int, y: int) -> None:
        xtest.fake_input(self.d, X.MotionNotify, x=x, y=y)

    def button(self, button: int, down: bool) -> None:
        xtest.fake_input(self.d, X.ButtonPress if down else X.ButtonRelease, button)

    def key(self, keycode: int, down: bool) -> None:
        xtest.fake_input(self.d, X.KeyPress if down else X.KeyRelease, keycode)

    def bind(self, keysyms: set[int]) -> bool:
        """Bind keysyms missing from the layout to scratch keycodes; True if the keymap changed.

        After a change the caller must sync and pause briefly before pressing them: clients re-read the
        keymap when they see MappingNotify, and must do so after *all* the changes, not halfway.
        """
        if len(keysyms) > len(self._scratch):
            raise ValueError("more distinct characters than scratch keycodes in one batch")
        bound = {sym: kc for kc, sym in self._scratch.items()}
        for sym in keysyms:  # protect the ones already bound from eviction below
            if sym in bound:
                self._scratch.move_to_end(bound[sym])
        changed = False
        for sym in keysyms - bound.keys():
            self._bind_scratch(sym)
            changed = True
        return changed

    def keycodes(self, keysym: int) -> list[int]:
        """Keycodes to hold (in order) to produce ``keysym``: [shift, key], [key], or a scratch key."""
        found = self._keymap.get(keysym)
        if found is None:
            return [self._bind_scratch(keysym)]
        keycode, level = found
        return [self._shift, keycode] if level == 1 else [keycode]

    def scratch_capacity(self) -> int:
        return len(self._scratch)

    def in_keymap(self, keysym: int) -> bool:
        """True if the layout has the keysym on level 0/1 (else typing it binds a scratch keycode)."""
        return keysym in self._keymap

    def _load_keymap(self) -> None:
        count = self._max_kc - self._min_kc + 1
        self._mapping = self.d.get_keyboard_mapping(self._min_kc, count)
        keymap: dict[int, tuple[int, int]] = {}
        for i, syms in enumerate(self._mapping):
            for level in (0, 1):
                if level < len(syms) and syms[level] and syms[level] not in keymap:
                    keymap[syms[level]] = (self._min_kc + i, level)
        self._keymap = keymap

    def _spare_keycodes(self) -> list[int]:
        return [self._min_kc + i for i, syms in enumerate(self._mapping) if not any(syms)]

    def _bind_scratch(self, keysym: int) -> int:
        if not self._scratch:
            raise RuntimeError("the X keymap has no free keycode to type this character")
        for kc, bound in self._scratch.items():
            if bound == keysym:
                self._scratch.move_to_end(kc)
                return kc
        kc, _ = self._scratch.popitem(last=False)
        self.d.change_keyboard_mapping(kc, [(keysym, keysym)])
        self._scratch[kc] = keysym
        return kc

    def _restore_scratch(self) -> None:
        for kc, bound in self._scratch.items():
            if bound:
                self.d.change_keyboard_mapping(kc, [(X.NoSymbol, X.NoSymbol)])
        self.d.flush()

    # ------------------------------------------------------------------ windows (EWMH)
    def client_windows(self) -> list[int]:
        prop = self.root.get_full_property(self.atom("_NET_CLIENT_LIST"), Xatom.WINDOW)
        return list(prop.value) if prop else []

    def wm_class(self, wid: int) -> tuple[str, str]:
        """(instance, class) of a window, or empty strings if it is gone or has none."""
        try:
            cls = self.d.create_resource_object("window", wid).get_wm_class()
        except error.XError:
            return "", ""
        return cls if cls else ("", "")

    def active_window(self) -> int:
        prop = self.root.get_full_property(self.atom("_NET_ACTIVE_WINDOW"), Xatom.WINDOW)
        return int(prop.value[0]) if prop and len(prop.value) else 0

    def is_viewable(self, wid: int) -> bool:
        try:
            return self.d.create_resource_object("window", wid).get_attributes().map_state == X.IsViewable
        except error.XError:
            return False

    def _client_message(self, wid: int, message: str, data: list[int]) -> None:
        ev = xevent.ClientMessage(
            window=self.d.create_resource_object("window", wid),
            client_type=self.atom(message),
            data=(32, (data + [0] * 5)[:5]),
        )
        self.root.send_event(ev, event_mask=X.SubstructureRedirectMask | X.SubstructureNotifyMask)

    def activate(self, wid: int) -> None:
        """Ask the WM to raise and focus a window (source 2 = pager: focus-stealing prevention allows it)."""
        self._client_message(wid, "_NET_ACTIVE_WINDOW", [2, X.CurrentTime, 0])
        self.d.flush()

    def maximize(self, wid: int) -> None:
        self._client_message(
            wid,
            "_NET_WM_STATE",
            [1, self.atom("_NET_WM_STATE_MAXIMIZED_VERT"), self.atom("_NET_WM_STATE_MAXIMIZED_HORZ"), 2],
        )
        self.d.flush()

    def show_desktop(self, on: bool = True) -> None:
        self._client_message(self.root.id, "_NET_SHOWING_DESKTOP", [1 if on else 0])
        self.d.flush()

    def showing_desktop(self) -> bool:
        prop = self.root.get_full_property(self.atom("_NET_SHOWING_DESKTOP"), Xatom.CARDINAL)
        return bool(prop and len(prop.value) and prop.value[0])


@dataclass
class Paste:
    """Progress of one paste: when the text was handed to a client, and whether it has read it."""

    written_at: float = 0.0
    consumed: threading.Event = field(default_factory=threading.Event)


class Clipboard:
    """Owns CLIPBOARD (and PRIMARY) on its own X connection and serves paste requests from a thread.

    ``offer(text)`` takes ownership and returns a ``Paste``: ``written`` is set once a client asked for the
    text and got it, ``consumed`` once it also deleted the property as ICCCM asks (i.e. it has read it),
    which is how ``paste_text`` knows the paste happened. Large texts go out with the INCR protocol.
    Only the clipboard thread touches its X connection (python-xlib is not safe to share across threads);
    ``offer`` hands the text over through a queue and a wake-up pipe.
    """

    CHUNK = 65536

    def __init__(self, name: str) -> None:
        self.d = open_display(name)
        root = self.d.screen().root
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
        self.a = {n: self.d.intern_atom(n) for n in atoms}
        self.a["STRING"] = Xatom.STRING
        self.d.sync()
        self._data = b""
        self._paste = Paste()
        self._reading: set[tuple[int, int]] = set()  # (requestor, property) written, not yet deleted
        self._incr: dict[tuple[int, int], memoryview] = {}
        self._incr_kind = self.a["UTF8_STRING"]
        self._stop = False
        self._offers: queue.SimpleQueue[tuple[bytes, threading.Event, threading.Event, list[bool]]] = (
            queue.SimpleQueue()
        )
        self._wake_r, self._wake_w = os.pipe()
        self._thread = threading.Thread(target=self._serve, name="x11-clipboard", daemon=True)
        self._thread.start()

    def offer(self, text: str, timeout: float = 2.0) -> Paste:
        paste, owned, ok = Paste(), threading.Event(), [False]
        self._offers.put((text.encode("utf-8"), paste, owned, ok))
        os.write(self._wake_w, b"o")
        if not owned.wait(timeout) or not ok[0]:
            raise OSError("could not take ownership of the CLIPBOARD selection")
        return paste

    def close(self) -> None:
        self._stop = True
        with contextlib.suppress(OSError):
            os.write(self._wake_w, b"q")
        self._thread.join(timeout=2)
        with contextlib.suppress(*CONNECTION_ERRORS):
            self.d.close()
        for fd in (self._wake_r, self._wake_w):
            with contextlib.suppress(OSError):
                os.close(fd)

    @property
    def alive(self) -> bool:
        return self._thread.is_alive()

    def _serve(self) -> None:
        try:
            while not self._stop:
                ready, _, _ = select.select([self.d.fileno(), self._wake_r], [], [], 0.5)
                if self._wake_r in ready:
                    os.read(self._wake_r, 64)
                while not self._offers.empty():
                    self._own(*self._offers.get_nowait())
                while self.d.pending_events():
                    ev = self.d.next_event()
                    if ev.type == X.SelectionRequest:
                        self._answer(ev)
                    elif ev.type == X.PropertyNotify and ev.state == X.PropertyDelete:
                        self._deleted(ev.window.id, ev.atom)
        except CONNECTION_ERRORS:
            return

    def _own(self, data: bytes, paste: Paste, owned: threading.Event, ok: list[bool]) -> None:
        try:
            self._data, self._paste, self._incr = data, paste, {}
            self._reading.clear()
            for sel in ("CLIPBOARD", "PRIMARY"):
                self.win.set_selection_owner(self.a[sel], X.CurrentTime)
            ok[0] = self.d.get_selection_owner(self.a["CLIPBOARD"]) == self.win
        finally:
            owned.set()

    def _answer(self, ev: xevent.SelectionRequest) -> None:
        prop = ev.property or ev.target
        requestor = ev.requestor
        a = self.a
        text_targets = (a["UTF8_STRING"], a["TEXT"], a["text/plain;charset=utf-8"])
        try:
            if ev.target == a["TARGETS"]:
                targets = [a["TARGETS"], a["TIMESTAMP"], *text_targets, a["STRING"], a["text/plain"]]
                requestor.change_property(prop, Xatom.ATOM, 32, targets)
            elif ev.target == a["TIMESTAMP"]:
                requestor.change_property(prop, Xatom.INTEGER, 32, [X.CurrentTime])
            elif ev.target in (*text_targets, a["STRING"], a["text/plain"]):
                data = self._data
                if ev.target in (a["STRING"], a["text/plain"]):
                    data = data.decode("utf-8").encode("latin-1", "replace")
                kind = a["UTF8_STRING"] if ev.target != a["STRING"] else a["STRING"]
                if len(data) > self.CHUNK:
                    requestor.change_attributes(event_mask=X.PropertyChangeMask)
                    self._incr[(requestor.id, prop)] = memoryview(data)
                    self._incr_kind = kind
                    requestor.change_property(prop, a["INCR"], 32, [len(data)])
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
        self.d.flush()

    def _deleted(self, window: int, prop: int) -> None:
        win = self.d.create_resource_object("window", window)
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
        self.d.flush()
