"""MIT-SHM: a shared-memory segment the size of the screen, which the X server copies the root window into.

The requests go through python-xlib (three request classes below), so a vanished X server raises a Python
exception instead of Xlib's exit(); the segment is made and mapped with libc's System V calls.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import logging
import os
from typing import Any

import numpy as np
from Xlib import X, error
from Xlib import display as xdisplay
from Xlib.protocol import rq

log = logging.getLogger(__name__)

libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
libc.shmget.argtypes = [ctypes.c_int, ctypes.c_size_t, ctypes.c_int]
libc.shmat.restype = ctypes.c_void_p
libc.shmat.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_int]
libc.shmdt.argtypes = [ctypes.c_void_p]
libc.shmctl.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_void_p]
_IPC_PRIVATE, _IPC_CREAT, _IPC_RMID = 0, 0o1000, 0


class _ShmAttach(rq.Request):
    _request = rq.Struct(
        rq.Card8("opcode"),
        rq.Opcode(1),
        rq.RequestLength(),
        rq.Card32("shmseg"),
        rq.Card32("shmid"),
        rq.Bool("read_only"),
        rq.Pad(3),
    )


class _ShmDetach(rq.Request):
    _request = rq.Struct(rq.Card8("opcode"), rq.Opcode(2), rq.RequestLength(), rq.Card32("shmseg"))


class _ShmGetImage(rq.ReplyRequest):
    _request = rq.Struct(
        rq.Card8("opcode"),
        rq.Opcode(4),
        rq.RequestLength(),
        rq.Drawable("drawable"),
        rq.Int16("x"),
        rq.Int16("y"),
        rq.Card16("width"),
        rq.Card16("height"),
        rq.Card32("plane_mask"),
        rq.Card8("format"),
        rq.Pad(3),
        rq.Card32("shmseg"),
        rq.Card32("offset"),
    )
    _reply = rq.Struct(
        rq.ReplyCode(),
        rq.Card8("depth"),
        rq.Card16("sequence_number"),
        rq.ReplyLength(),
        rq.Card32("visual"),
        rq.Card32("size"),
        rq.Pad(16),
    )


class SharedFrame:
    """One shared-memory segment the size of the screen, attached by the X server: ``grab`` has the server
    copy the root window into it and returns a BGRX view of it (valid until the next grab)."""

    def __init__(self, display: xdisplay.Display, opcode: int, segment: int, address: int, frame: np.ndarray):
        self._display, self._opcode, self._segment = display, opcode, segment
        self._address, self._frame = address, frame

    @classmethod
    def attach(cls, display: xdisplay.Display, name: str) -> SharedFrame | None:
        """The shared frame, or None (logged) when the server has no MIT-SHM or cannot attach it."""
        ext = display.query_extension("MIT-SHM")  # None when absent
        if ext is None:
            log.warning("no MIT-SHM: screenshots come over the socket", extra={"display": name})
            return None
        screen = display.screen()
        width, height = screen.width_in_pixels, screen.height_in_pixels
        size = width * height * 4
        shmid = libc.shmget(_IPC_PRIVATE, size, _IPC_CREAT | 0o600)
        address = libc.shmat(shmid, None, 0) if shmid >= 0 else None
        if address in (None, ctypes.c_void_p(-1).value):
            error_text = os.strerror(ctypes.get_errno())
            if shmid >= 0:
                libc.shmctl(shmid, _IPC_RMID, None)
            log.warning("no shared memory: screenshots come over the socket", extra={"error": error_text})
            return None
        segment = display.display.allocate_resource_id()
        refused = error.CatchError()
        try:
            _ShmAttach(
                display=display.display,
                onerror=refused,
                opcode=ext.major_opcode,
                shmseg=segment,
                shmid=shmid,
                read_only=False,
            )
            display.sync()
        except BaseException:
            libc.shmdt(address)
            raise
        finally:
            libc.shmctl(shmid, _IPC_RMID, None)  # freed once both sides detach
        if refused.get_error() is not None:
            libc.shmdt(address)
            display.display.free_resource_id(segment)
            log.warning(
                "the X server cannot attach our shared memory (does it run as another user?): "
                "screenshots come over the socket",
                extra={"display": name, "error": type(refused.get_error()).__name__},
            )
            return None
        buf = (ctypes.c_ubyte * size).from_address(address)
        frame = np.ctypeslib.as_array(buf).reshape(height, width, 4)
        return cls(display, ext.major_opcode, segment, address, frame)

    @property
    def frame(self) -> np.ndarray:
        """What the grabs put there so far, as BGRX."""
        return self._frame

    def grab(self, root: object, rows: tuple[int, int] | None = None) -> np.ndarray:
        """Only ``rows`` (top, bottom) when given: the server writes them in place (a band of whole rows has
        the frame's stride), the other rows keep what the last grab put there."""
        height = self._frame.shape[0]
        top, bottom = (max(0, rows[0]), min(height, rows[1])) if rows is not None else (0, height)
        if bottom <= top:
            return self._frame  # nothing was drawn since the last grab
        _ShmGetImage(
            display=self._display.display,
            opcode=self._opcode,
            drawable=root,
            x=0,
            y=top,
            width=self._frame.shape[1],
            height=bottom - top,
            plane_mask=0xFFFFFFFF,
            format=X.ZPixmap,
            shmseg=self._segment,
            offset=top * self._frame.strides[0],
        )
        return self._frame

    def detach(self) -> None:
        """Before the connection closes; the local mapping goes even if the server is gone already."""
        with contextlib.suppress(Exception):
            _ShmDetach(display=self._display.display, opcode=self._opcode, shmseg=self._segment)
        libc.shmdt(self._address)


def grab_by_copy(root: Any, width: int, height: int) -> np.ndarray:
    """The root window as BGRX through the X protocol itself (GetImage), for a display without MIT-SHM or one
    whose segment could not be made: the whole screen crosses the socket, 10-20 ms where the shared frame
    takes a few."""
    image = root.get_image(0, 0, width, height, X.ZPixmap, 0xFFFFFFFF)
    return np.frombuffer(image.data, np.uint8).reshape(height, width, 4)
