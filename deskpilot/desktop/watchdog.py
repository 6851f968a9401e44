"""A bound on a block of X calls on the input connection.

python-xlib waits for a reply with no time-out: a server that stops answering holds the caller forever, and
so does a connection whose receive loop an exception left half-way (python-xlib then believes another
thread is reading, and every later reply wait on it spins at full CPU). When a block outlives its bound, a
timer thread severs the connection: shutting the socket down wakes a call blocked on it, and marking the
connection closed ends a spinning reply wait. The block's failure becomes ``ActionTimedOut`` (504), and the
connection is replaced on its next use (``Connections``). The block must not await: the timer cuts the
connection, not one call.
"""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import Iterator

from deskpilot.desktop.x11.connection import XConnection
from deskpilot.errors import ActionTimedOut


@contextlib.contextmanager
def bounded(x: XConnection, seconds: float, what: str) -> Iterator[None]:
    """The X calls of the block finish within ``seconds``, or raise ``ActionTimedOut`` saying ``what``."""
    timer = threading.Timer(seconds, sever, (x,))
    timer.daemon = True
    timer.start()
    try:
        yield
    except Exception as exc:
        if x.severed:
            raise ActionTimedOut(
                f"the X server of {x.name} did not answer {what} within {seconds:g} s; the connection was "
                "dropped and the next request opens a new one"
            ) from exc
        raise
    finally:
        timer.cancel()


def sever(x: XConnection) -> None:
    """Cut the connection under whatever call is waiting on it (from another thread)."""
    x.severed = True
    wire = x.display.display  # python-xlib's protocol connection under the Display
    with contextlib.suppress(OSError):
        wire.socket.shutdown(socket.SHUT_RDWR)
    with contextlib.suppress(Exception):  # its state may be half-way through the call it cuts short
        wire.close_internal("watchdog")
