"""The X connection of the desktop service: XTest input, the keymap and EWMH windows.

This module, ``clipboard.py`` and ``capture.py`` are the only ones that import Xlib. Every call is
synchronous and fast (XTest costs ~0.1 ms per event); callers serialise input themselves. A lost X server
surfaces as one of ``CONNECTION_ERRORS``; the controller then drops the connection and opens a new one later.
"""

from __future__ import annotations

from collections import OrderedDict

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
        self.display = open_display(name)
        if not self.display.has_extension("XTEST"):
            self.display.close()
            raise error.DisplayConnectionError(name, "the X server has no XTEST extension")
        self.root = self.display.screen().root
        self.width = self.display.screen().width_in_pixels
        self.height = self.display.screen().height_in_pixels
        self._atoms: dict[str, int] = {}
        info = self.display.display.info
        self._min_kc, self._max_kc = info.min_keycode, info.max_keycode
        self._load_keymap()
        self._shift = self.display.keysym_to_keycode(XK.XK_Shift_L)
        # scratch keycodes (no keysym bound) hold characters missing from the layout; LRU so a keycode is
        # not rebound while a client may still be translating an earlier press of it
        self._scratch: OrderedDict[int, int] = OrderedDict((kc, 0) for kc in self._spare_keycodes())

    def close(self) -> None:
        try:
            self._restore_scratch()
            self.display.close()
        except CONNECTION_ERRORS:
            pass

    # ------------------------------------------------------------------ basics
    def atom(self, name: str) -> int:
        found = self._atoms.get(name)
        if found is None:
            found = self._atoms[name] = self.display.intern_atom(name)
        return found

    def sync(self) -> None:
        self.display.sync()

    def ping(self) -> None:
        self.display.get_input_focus()

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
            self.display.ungrab_pointer(X.CurrentTime)
            return False
        return True

    # ------------------------------------------------------------------ XTest input
    def move(self, x: int, y: int) -> None:
        xtest.fake_input(self.display, X.MotionNotify, x=x, y=y)

    def button(self, button: int, down: bool) -> None:
        xtest.fake_input(self.display, X.ButtonPress if down else X.ButtonRelease, button)

    def key(self, keycode: int, down: bool) -> None:
        xtest.fake_input(self.display, X.KeyPress if down else X.KeyRelease, keycode)

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
        self._mapping = self.display.get_keyboard_mapping(self._min_kc, count)
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
        self.display.change_keyboard_mapping(kc, [(keysym, keysym)])
        self._scratch[kc] = keysym
        return kc

    def _restore_scratch(self) -> None:
        for kc, bound in self._scratch.items():
            if bound:
                self.display.change_keyboard_mapping(kc, [(X.NoSymbol, X.NoSymbol)])
        self.display.flush()

    # ------------------------------------------------------------------ windows (EWMH)
    def client_windows(self) -> list[int]:
        prop = self.root.get_full_property(self.atom("_NET_CLIENT_LIST"), Xatom.WINDOW)
        return list(prop.value) if prop else []

    def wm_class(self, wid: int) -> tuple[str, str]:
        """(instance, class) of a window, or empty strings if it is gone or has none."""
        try:
            cls = self.display.create_resource_object("window", wid).get_wm_class()
        except error.XError:
            return "", ""
        return cls if cls else ("", "")

    def active_window(self) -> int:
        prop = self.root.get_full_property(self.atom("_NET_ACTIVE_WINDOW"), Xatom.WINDOW)
        return int(prop.value[0]) if prop and len(prop.value) else 0

    def is_viewable(self, wid: int) -> bool:
        try:
            attributes = self.display.create_resource_object("window", wid).get_attributes()
        except error.XError:
            return False
        return bool(attributes.map_state == X.IsViewable)

    def _client_message(self, wid: int, message: str, data: list[int]) -> None:
        ev = xevent.ClientMessage(
            window=self.display.create_resource_object("window", wid),
            client_type=self.atom(message),
            data=(32, (data + [0] * 5)[:5]),
        )
        self.root.send_event(ev, event_mask=X.SubstructureRedirectMask | X.SubstructureNotifyMask)

    def activate(self, wid: int) -> None:
        """Ask the WM to raise and focus a window (source 2 = pager: focus-stealing prevention allows it)."""
        self._client_message(wid, "_NET_ACTIVE_WINDOW", [2, X.CurrentTime, 0])
        self.display.flush()

    def maximize(self, wid: int) -> None:
        self._client_message(
            wid,
            "_NET_WM_STATE",
            [1, self.atom("_NET_WM_STATE_MAXIMIZED_VERT"), self.atom("_NET_WM_STATE_MAXIMIZED_HORZ"), 2],
        )
        self.display.flush()

    def show_desktop(self, on: bool = True) -> None:
        self._client_message(self.root.id, "_NET_SHOWING_DESKTOP", [1 if on else 0])
        self.display.flush()

    def showing_desktop(self) -> bool:
        prop = self.root.get_full_property(self.atom("_NET_SHOWING_DESKTOP"), Xatom.CARDINAL)
        return bool(prop and len(prop.value) and prop.value[0])
