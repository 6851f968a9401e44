"""Screen capture over MIT-SHM and image encoding: the screenshot hot path.

The pipeline is the fastest one measured in ``notes/perf-limits.md``: the X server copies the root window
into a SysV shared-memory segment (``ShmGetImage``, ~0.3 ms), numpy views it without copying,
``cv2.cvtColor`` drops the padding byte (it is not zero) while converting to RGB, fpng encodes the PNG
(~4 ms). The MIT-SHM requests go through python-xlib (two request classes below), so a vanished X server
raises a Python exception instead of Xlib's exit(). Never XGetImage over the socket, never Pillow's PNG.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import threading
from dataclasses import dataclass

import cv2
import fpng
import numpy as np
from Xlib import X
from Xlib.protocol import rq

from app.desktop.x11 import open_display

_libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
_libc.shmget.argtypes = [ctypes.c_int, ctypes.c_size_t, ctypes.c_int]
_libc.shmat.restype = ctypes.c_void_p
_libc.shmat.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_int]
_libc.shmdt.argtypes = [ctypes.c_void_p]
_libc.shmctl.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_void_p]
_IPC_PRIVATE, _IPC_CREAT, _IPC_RMID = 0, 0o1000, 0

cv2.setNumThreads(1)  # 2 cores shared with the desktop apps: CPU time is the real cost


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


@dataclass(frozen=True, slots=True)
class Image:
    """An encoded screenshot: the bytes as they go on the wire (before base64) and their media type."""

    data: bytes
    media_type: str
    width: int
    height: int


MEDIA_TYPES = {"png": "image/png", "jpeg": "image/jpeg", "webp": "image/webp"}


class Capturer:
    """Grabs the root window through one shared-memory segment; one grab at a time (the buffer is shared)."""

    def __init__(self, name: str) -> None:
        self.display = open_display(name)
        ext = self.display.query_extension("MIT-SHM")
        if not ext.present:
            self.display.close()
            raise OSError(f"the X server {name} has no MIT-SHM extension")
        self._opcode = ext.major_opcode
        screen = self.display.screen()
        self.root = screen.root
        self.width, self.height = screen.width_in_pixels, screen.height_in_pixels
        if screen.root_depth != 24:
            self.display.close()
            raise OSError(f"screen depth {screen.root_depth} is not supported (need 24)")
        size = self.width * self.height * 4
        self._shmid = _libc.shmget(_IPC_PRIVATE, size, _IPC_CREAT | 0o600)
        if self._shmid < 0:
            self.display.close()
            raise OSError(ctypes.get_errno(), "shmget failed")
        addr = _libc.shmat(self._shmid, None, 0)
        if addr in (None, ctypes.c_void_p(-1).value):
            _libc.shmctl(self._shmid, _IPC_RMID, None)
            self.display.close()
            raise OSError(ctypes.get_errno(), "shmat failed")
        self._addr = addr
        self._seg = self.display.display.allocate_resource_id()
        try:
            _ShmAttach(
                display=self.display.display,
                opcode=self._opcode,
                shmseg=self._seg,
                shmid=self._shmid,
                read_only=False,
            )
            self.display.sync()
        finally:
            _libc.shmctl(self._shmid, _IPC_RMID, None)  # freed once both sides detach
        buf = (ctypes.c_ubyte * size).from_address(addr)
        self._bgrx = np.ctypeslib.as_array(buf).reshape(self.height, self.width, 4)
        self._lock = threading.Lock()
        self._closed = False

    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
            try:
                _ShmDetach(display=self.display.display, opcode=self._opcode, shmseg=self._seg)
                self.display.close()
            except Exception:  # the server may be gone already; the local mapping is all that is left
                pass
            _libc.shmdt(self._addr)

    def grab_bgr(self) -> np.ndarray:
        """A fresh BGR frame (own memory) of the whole screen."""
        with self._lock:
            self._grab()
            return cv2.cvtColor(self._bgrx, cv2.COLOR_BGRA2BGR)

    def grab_rgb(self) -> np.ndarray:
        with self._lock:
            self._grab()
            return cv2.cvtColor(self._bgrx, cv2.COLOR_BGRA2RGB)

    def _grab(self) -> None:
        if self._closed:
            raise OSError("capture connection closed")
        _ShmGetImage(
            display=self.display.display,
            opcode=self._opcode,
            drawable=self.root,
            x=0,
            y=0,
            width=self.width,
            height=self.height,
            plane_mask=0xFFFFFFFF,
            format=X.ZPixmap,
            shmseg=self._seg,
            offset=0,
        )

    def screenshot(
        self, fmt: str = "png", quality: int = 80, width: int | None = None, scale: float | None = None
    ) -> Image:
        """Capture and encode; the default (PNG, full size) is lossless."""
        frame = self.grab_rgb() if fmt == "png" else self.grab_bgr()
        return encode(frame, fmt, quality, target_size(self.width, self.height, width, scale))


def target_size(w: int, h: int, width: int | None, scale: float | None) -> tuple[int, int]:
    if width is not None and width < w:
        return width, max(1, round(h * width / w))
    if scale is not None and scale < 1:
        return max(1, round(w * scale)), max(1, round(h * scale))
    return w, h


def encode(frame: np.ndarray, fmt: str, quality: int, size: tuple[int, int]) -> Image:
    """Encode an RGB (png) or BGR (jpeg, webp) frame, downscaling with INTER_AREA (right for text)."""
    if size != (frame.shape[1], frame.shape[0]):
        frame = cv2.resize(frame, size, interpolation=cv2.INTER_AREA)
    if fmt == "png":
        data = fpng.from_ndarray(frame)
    elif fmt == "jpeg":
        _, buf = cv2.imencode(".jpg", frame, [cv2.IMWRITE_JPEG_QUALITY, quality])
        data = buf.tobytes()
    elif fmt == "webp":
        _, buf = cv2.imencode(".webp", frame, [cv2.IMWRITE_WEBP_QUALITY, quality])
        data = buf.tobytes()
    else:
        raise ValueError(f"unknown image format {fmt!r}")
    return Image(data=data, media_type=MEDIA_TYPES[fmt], width=size[0], height=size[1])


def tune_malloc() -> None:
    """Keep frame-sized buffers on the heap instead of fresh mmaps: on this VM a page fault costs ~2.7 us
    and a 1080p frame re-faulted per screenshot loses 3-9 ms (notes/perf-limits.md). Same effect as
    MALLOC_MMAP_THRESHOLD_=32 MiB and MALLOC_TRIM_THRESHOLD_=1 GiB."""
    m_trim_threshold, m_mmap_threshold = -1, -3
    with contextlib.suppress(AttributeError):
        _libc.mallopt(m_mmap_threshold, 32 << 20)
        _libc.mallopt(m_trim_threshold, 1 << 30)
