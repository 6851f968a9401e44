"""Connecting to the X server: the display the service owns, and the edge of python-xlib.

Every connection of the service opens here (``open_display``), is checked to be the display it owns, and gets
python-xlib's tables mended: per connection, with the core error classes its RANDR module overwrites. A lost
server is ``DisplayLost`` (``lost_display`` translates), a display that is not ours ``UnsupportedDisplay``;
an error nobody waits for is logged.
"""

from __future__ import annotations

import contextlib
import logging
import pwd
import socket
import struct
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, NamedTuple

from Xlib import display as xdisplay
from Xlib import error
from Xlib.protocol import event as xevent

from deskpilot.errors import DisplayLost, UnsupportedDisplay

log = logging.getLogger(__name__)

# What python-xlib raises when the server is gone or cannot be reached (socket errors become
# ConnectionClosedError once connected). Nothing else means a lost display.
LOST_CONNECTION: tuple[type[BaseException], ...] = (
    error.ConnectionClosedError,
    error.DisplayConnectionError,
    ConnectionError,
    EOFError,
)


def _tables_per_connection() -> None:
    """python-xlib (0.33) registers each server's extension events and errors in tables shared by every
    connection of the process, at the codes that server gave them: a second server with other extensions
    (one without MIT-SHM numbers the rest differently) finds them taken, and connecting fails with a
    TypeError or its events decode as the wrong kind. Each connection gets its own copies instead."""
    base_init: Any = xdisplay._BaseDisplay.__init__

    def init(self: Any, *args: Any, **kwargs: Any) -> None:
        base_init(self, *args, **kwargs)
        self.event_classes = dict(xevent.event_class)
        self.error_classes = dict(error.xerror_class)

    setattr(xdisplay._BaseDisplay, "__init__", init)  # noqa: B010 - a method assignment, said plainly


_tables_per_connection()


class Owner(NamedTuple):
    name: str
    uid: int


@dataclass(frozen=True, slots=True)
class Requirements:
    """The display the service owns: its screen, and the user its X server runs as (when configured)."""

    width: int
    height: int
    depth: int = 24
    owner: Owner | None = None


def display_lost(name: str, reason: object) -> DisplayLost:
    return DisplayLost(f"the X display {name} is not available ({reason}); retry in a moment")


@contextlib.contextmanager
def lost_display(name: str) -> Iterator[None]:
    """Around X calls: python-xlib's connection failures become ``DisplayLost``."""
    try:
        yield
    except LOST_CONNECTION as exc:
        raise display_lost(name, f"{type(exc).__name__}: {exc}") from None


def open_display(
    name: str, required: Requirements, setup: Callable[[xdisplay.Display], None] | None = None
) -> xdisplay.Display:
    """A connection to the display ``name`` if it is the one ``required`` describes, ``setup`` run on it (its
    X errors the service's own); closed again when either fails."""
    with lost_display(name):
        try:
            display = xdisplay.Display(name)
        except error.DisplayNameError:
            raise UnsupportedDisplay(f"{name!r} is not an X display name; set DESKTOP_DISPLAY") from None
        except LOST_CONNECTION:
            raise
        except Exception as exc:  # python-xlib raises bare Exceptions for some auth/handshake failures
            raise error.DisplayConnectionError(name, str(exc)) from exc
    mend_error_classes(display)
    display.set_error_handler(log_x_error)
    try:
        check_display(display, name, required)
        if setup is not None:
            with lost_display(name):
                setup(display)
    except BaseException:
        display.close()
        raise
    return display


def mend_error_classes(display: xdisplay.Display) -> None:
    """python-xlib 0.33's RANDR and DAMAGE register their errors at codes 0-2, not at the extension's first
    error code, over the core BadRequest and BadValue, with classes that cannot parse an error: a BadValue
    then raises AttributeError inside the receive loop, which leaves the connection waiting for ever. The
    core classes go back; an extension's errors parse as a plain XError."""
    classes = display.display.error_classes
    for code in [code for code in classes if code < 128 and code not in error.xerror_class]:
        del classes[code]
    classes.update(error.xerror_class)


def log_x_error(err: error.XError, request: object) -> None:
    """Where python-xlib sends the error of a request nobody waits for (its own default writes to stderr
    from inside the receive loop, where a failing write leaves the connection unusable): our log."""
    log.warning("X protocol error", extra={"error": type(err).__name__, "detail": str(err)[:300]})


def check_display(display: xdisplay.Display, name: str, required: Requirements) -> None:
    """``UnsupportedDisplay`` unless the screen and the server's user are as required (no round trip)."""
    screen = display.screen()
    have = (screen.width_in_pixels, screen.height_in_pixels, screen.root_depth)
    want = (required.width, required.height, required.depth)
    if have != want:
        raise UnsupportedDisplay(
            f"the X display {name} is {have[0]}x{have[1]} at depth {have[2]}; this service drives a "
            f"{want[0]}x{want[1]} screen at depth {want[2]} (Xvfb -screen 0 {want[0]}x{want[1]}x{want[2]}): "
            "it is not the display this service was configured to own"
        )
    if required.owner is not None:
        _check_owner(display, name, required.owner)


def _check_owner(display: xdisplay.Display, name: str, owner: Owner) -> None:
    """The server behind the socket must run as ``owner``: its credentials, as the kernel gives them for
    the connected socket (the owner of /tmp/.X11-unix/X<n>, or of the abstract socket python-xlib may use)."""
    sock = display.display.socket
    if sock.family != socket.AF_UNIX:
        raise UnsupportedDisplay(
            f"the X display {name} is reached over TCP, so the user its server runs as cannot be checked; "
            "use a local display or unset DESKTOP_DISPLAY_OWNER"
        )
    creds = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    _, uid, _ = struct.unpack("3i", creds)
    if uid != owner.uid:
        try:
            runs_as = pwd.getpwuid(uid).pw_name
        except KeyError:
            runs_as = f"uid {uid}"
        raise UnsupportedDisplay(
            f"the X server of {name} runs as {runs_as}, not as {owner.name} (DESKTOP_DISPLAY_OWNER): "
            "it is not the display this service was configured to own"
        )
