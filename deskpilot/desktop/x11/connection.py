"""The X connection of the desktop service: XTest input, the keymap and EWMH windows.

One of the X edge's modules (``deskpilot.desktop.x11``), which alone see python-xlib's exceptions: it raises
the service's own instead (``deskpilot.errors``); a character that cannot be typed is ``KeymapFull``. Every
call is synchronous and fast (XTest costs ~0.1 ms per event); callers serialise input themselves.
"""

from __future__ import annotations

import contextlib
from collections import OrderedDict
from collections.abc import Iterable

from Xlib import XK, X, Xatom, error
from Xlib import display as xdisplay
from Xlib.ext import xtest
from Xlib.protocol import event as xevent

from deskpilot.desktop.x11.server import LOST_CONNECTION, Requirements, open_display
from deskpilot.errors import KeymapFull, UnsupportedDisplay

# back and forward (8, 9) are an extension of the spec's three: browsers and file managers navigate with them
BUTTONS = {"left": 1, "middle": 2, "right": 3, "back": 8, "forward": 9}
SCROLL_BUTTONS = {"up": 4, "down": 5, "left": 6, "right": 7}


def keysym_text(keysym: int) -> str:
    """The character a keysym types, or its name."""
    if keysym >= 0x1000000:
        return chr(keysym - 0x1000000)
    if 0x20 <= keysym <= 0xFF:
        return chr(keysym)
    return XK.keysym_to_string(keysym) or hex(keysym)


class XConnection:
    """One X client connection used for input and window management."""

    def __init__(self, name: str, required: Requirements) -> None:
        self.name = name
        self.severed = False  # cut by a watchdog (``watchdog.py``): replaced, never used again
        self.display = open_display(name, required, self._setup)

    def _setup(self, display: xdisplay.Display) -> None:
        self.display = display
        if not self.display.has_extension("XTEST"):
            raise UnsupportedDisplay(f"the X server of {self.name} has no XTEST extension (+extension XTEST)")
        self.root = self.display.screen().root
        self._atoms: dict[str, int] = {}
        info = self.display.display.info
        self._min_kc, self._max_kc = info.min_keycode, info.max_keycode
        self._load_keymap()
        self._shift = self.display.keysym_to_keycode(XK.XK_Shift_L)
        # scratch keycodes (no keysym bound) hold characters missing from the layout; LRU so a keycode is
        # not rebound while a client may still be translating an earlier press of it
        self._scratch: OrderedDict[int, int] = OrderedDict((kc, 0) for kc in self._spare_keycodes())
        # A key held with press_keys down stays down while the agent's model thinks: the server's autorepeat
        # (after 660 ms) would type it on and on. A human's keys come through the live view, whose browser
        # sends its own repeats.
        self.display.change_keyboard_control(auto_repeat_mode=X.AutoRepeatModeOff)

    def close(self) -> None:
        if self.severed:  # its socket is closed, and python-xlib's locks may be held by the cut call
            return
        with contextlib.suppress(*LOST_CONNECTION):  # the keymap of a lost server needs no restoring
            self._restore_scratch()
        with contextlib.suppress(*LOST_CONNECTION):
            self.display.close()

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

    def release_all(self) -> None:
        """Release every key and mouse button that is down (a client that died mid-chord left them)."""
        pressed = self.display.query_keymap()
        for keycode in range(self._min_kc, self._max_kc + 1):
            if pressed[keycode // 8] & (1 << (keycode % 8)):
                self.key(keycode, False)
        mask = self.root.query_pointer().mask
        for button, bit in enumerate((X.Button1Mask, X.Button2Mask, X.Button3Mask), start=1):
            if mask & bit:
                self.button(button, False)

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

    def require_typeable(self, keysyms: Iterable[int]) -> None:
        """``KeymapFull`` if one of them is missing from the layout and no keycode is spare to hold it."""
        if self._scratch:
            return
        missing = next((sym for sym in keysyms if sym not in self._keymap), None)
        if missing is not None:
            raise KeymapFull(
                f"the keyboard layout has no key for {keysym_text(missing)!r} and the keymap has no spare "
                "keycode to put it on; type text outside the layout with paste_text"
            )

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
        self.require_typeable([keysym])
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

    def application_windows(self) -> list[int]:
        """Client windows but the desktop's own (the desktop background and the panels)."""
        return self._client_windows(shell=False)

    def shell_windows(self) -> list[int]:
        """The desktop's own client windows: the desktop background and the panels."""
        return self._client_windows(shell=True)

    def _client_windows(self, shell: bool) -> list[int]:
        kinds_of_shell = {self.atom("_NET_WM_WINDOW_TYPE_DESKTOP"), self.atom("_NET_WM_WINDOW_TYPE_DOCK")}
        out = []
        for wid in self.client_windows():
            try:
                window = self.display.create_resource_object("window", wid)
                kinds = window.get_full_property(self.atom("_NET_WM_WINDOW_TYPE"), Xatom.ATOM)
            except error.XError:
                continue  # gone
            if bool(kinds and kinds_of_shell & set(kinds.value)) == shell:
                out.append(wid)
        return out

    def window_pid(self, wid: int) -> int:
        """The _NET_WM_PID the window's client claims (0 if none): a hint, never proof."""
        try:
            window = self.display.create_resource_object("window", wid)
            prop = window.get_full_property(self.atom("_NET_WM_PID"), Xatom.CARDINAL)
        except error.XError:
            return 0
        return int(prop.value[0]) if prop and len(prop.value) else 0

    def kill_client(self, wid: int) -> None:
        """Close the window's client connection (XKillClient): its program loses the display and exits."""
        # the window may be gone already: its error arrives later and is caught, not logged
        self.display.create_resource_object("window", wid).kill_client(onerror=error.CatchError())

    def client_at_pointer(self) -> int:
        """The client window (the one with WM_STATE) under the pointer, found below the window manager's frame
        as Xmu's XmuClientWindow does; the top-level window itself when none has WM_STATE; 0 over the root."""
        top = self.root.query_pointer().child
        if not top:
            return 0
        wm_state = self.atom("WM_STATE")
        level = [top]
        try:
            for _ in range(3):  # a frame, its client: deeper is no window manager's
                for window in level:
                    if window.get_property(wm_state, X.AnyPropertyType, 0, 0) is not None:
                        return int(window.id)
                level = [c for w in level for c in w.query_tree().children]
        except error.XError:  # gone meanwhile
            return 0
        return int(top.id)

    def window_manager(self) -> int:
        """The window manager's own window (EWMH _NET_SUPPORTING_WM_CHECK), 0 without one."""
        prop = self.root.get_full_property(self.atom("_NET_SUPPORTING_WM_CHECK"), Xatom.WINDOW)
        return int(prop.value[0]) if prop and len(prop.value) else 0

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
