"""The focused window, read on the input connection: its id, title and class (``Focus``), for evidence and
the accessibility tree. Reads sent together cost one round trip (``ask``, then ``answer``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from Xlib import X, Xatom, error
from Xlib.protocol import request

from deskpilot.desktop.x11.connection import XConnection

MAX_PROPERTY_LONGS = 1 << 16  # 256 KiB: a title or class longer than that is cut
TITLE_AND_CLASS = (("WM_NAME", X.AnyPropertyType), ("WM_CLASS", Xatom.STRING))


@dataclass(frozen=True, slots=True)
class Focus:
    id: int
    title: str
    wm_class: str

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "title": self.title, "class": self.wm_class}


def focused(x: XConnection) -> Focus | None:
    """The active window (EWMH), or None when none is."""
    return _focus(x, _read(x, x.root.id, "_NET_ACTIVE_WINDOW", Xatom.WINDOW))


@dataclass(slots=True)
class Asked:
    """Reads sent and not yet answered (``ask``)."""

    active: request.GetProperty
    guess: int  # the window likely active: its title and class were asked along (0: none)
    names: list[request.GetProperty]
    pointer: request.QueryPointer | None


def ask(x: XConnection, pointer: bool = False, guess: int = 0) -> Asked:
    """Send the read of the active window (and of the pointer) without waiting: the caller's round trip on
    another connection (the damage count) then overlaps theirs. With ``guess`` (the window active last
    time), its title and class go along: when it is still the active one, as it mostly is, they come in
    the same round trip. ``answer`` reads the replies."""
    active = _read(x, x.root.id, "_NET_ACTIVE_WINDOW", Xatom.WINDOW)
    names = _names(x, guess) if guess else []
    where = request.QueryPointer(display=x.display.display, defer=True, window=x.root.id) if pointer else None
    x.display.flush()
    return Asked(active, guess, names, where)


def answer(x: XConnection, asked: Asked) -> tuple[Focus | None, tuple[int, int]]:
    """The active window and the pointer (0, 0 when not asked) that ``ask`` sent for."""
    focus = _focus(x, asked.active, asked.guess, asked.names)
    if asked.pointer is None:
        return focus, (0, 0)
    asked.pointer.reply()
    return focus, (int(asked.pointer.root_x), int(asked.pointer.root_y))


def _read(x: XConnection, wid: int, name: str, kind: int) -> request.GetProperty:
    """A property read sent now and answered later: reads sent together cost one round trip, where
    python-xlib's own calls cost one each (~0.09 ms on this project's VM, ten per action with evidence)."""
    return request.GetProperty(
        display=x.display.display,
        defer=True,
        delete=False,
        window=wid,
        property=x.atom(name),
        type=kind,
        long_offset=0,
        long_length=MAX_PROPERTY_LONGS,
    )


def _names(x: XConnection, wid: int) -> list[request.GetProperty]:
    """The reads of a window's title and class (WM_NAME, WM_CLASS, _NET_WM_NAME), sent together."""
    reads = [_read(x, wid, name, kind) for name, kind in TITLE_AND_CLASS]
    return [*reads, _read(x, wid, "_NET_WM_NAME", x.atom("UTF8_STRING"))]


def _focus(
    x: XConnection,
    active: request.GetProperty,
    guess: int = 0,
    names: list[request.GetProperty] | None = None,
) -> Focus | None:
    """The window ``active`` (a read of _NET_ACTIVE_WINDOW) names, its title and class read together (or
    already asked for, when it is ``guess``; a guess that was wrong is left unread)."""
    active.reply()
    fmt, value = _value(active)
    wid = int(value[0]) if fmt == 32 and len(value) else 0
    if not wid:
        return None
    utf8 = x.atom("UTF8_STRING")
    reads = names if names and wid == guess else _names(x, wid)
    try:
        for read in reads:
            read.reply()
    except error.XError:  # gone meanwhile
        return None
    wm_name, wm_class, net_name = (_text(read, utf8) for read in reads)
    title = net_name if reads[2].property_type else wm_name
    parts = wm_class.split("\0")
    return Focus(wid, title, parts[1] if len(parts) > 1 else "")


def _value(read: request.GetProperty) -> tuple[int, Any]:
    """(format, data) of a property read; (0, ()) when the window has no such property."""
    return read.value if read.property_type else (0, ())


def _text(read: request.GetProperty, utf8: int) -> str:
    fmt, value = _value(read)
    if fmt != 8:
        return ""
    return bytes(value).decode("utf-8" if read.property_type == utf8 else "latin-1", errors="replace")


def keys_to(x: XConnection) -> Focus | None:
    """Where key events go now: the active window when there is one, else the X input focus window (or the
    one under the pointer, id 0, in PointerRoot mode); None when the focus is None and keys are lost."""
    focus = x.display.get_input_focus().focus
    if isinstance(focus, int) and focus == X.NONE:
        return None
    active = focused(x)
    if active is not None:
        return active
    wid = 0 if isinstance(focus, int) else int(focus.id)
    return Focus(wid, "", x.wm_class(wid)[1] if wid else "")
