"""Screen capture over MIT-SHM and image encoding: the screenshot hot path.

The pipeline is the fastest one measured (docs/design.md): the X server copies the root window into a SysV
shared-memory segment (``shm.SharedFrame``: only the rows drawn on since its last copy), numpy views it
without copying, ``cv2.cvtColor`` drops the padding byte (it is not zero) while converting to RGB, fpng
encodes the PNG (~3 ms). Scaled frames are resampled by ``resample``: only the bands that changed, else the
whole frame on two threads. Never Pillow's PNG.

A server without MIT-SHM, or one that cannot attach our segment (it runs as another user: the segment is
0600), gets a plain GetImage over the socket instead (~10x slower, same pixels); ``Capturer.path`` says
which one is in use, and /health reports it.
"""

from __future__ import annotations

import contextlib
import threading
from dataclasses import astuple, dataclass, replace
from typing import Literal

import cv2
import fpng
import numpy as np

from deskpilot.computer.fields import ScreenshotOptions
from deskpilot.computer.geometry import Size, image_size
from deskpilot.desktop import heap
from deskpilot.desktop.resample import (
    Band,
    bands,
    by_rows,
    downscale,
    downscale_whole,
    redo_rows,
    source_rows,
)
from deskpilot.desktop.x11.damage import DamageWatcher, open_watcher
from deskpilot.desktop.x11.server import Requirements, display_lost, lost_display, open_display
from deskpilot.desktop.x11.shm import SharedFrame, grab_by_copy

FrameKey = tuple[str, int, tuple[int, int], tuple[int, int, int, int] | None, int | None]
Kept = tuple[np.ndarray, list[Band]]  # a kept scaled frame, and the bands of it to resample
WHOLE = ScreenshotOptions()  # the whole screen, a lossless PNG (never changed: it is every default)
MAX_CACHED_FRAMES = 8  # distinct (format, quality, size) kept; a client asks for one or two
cv2.setNumThreads(1)  # 2 cores shared with the desktop apps: CPU time is the real cost


@dataclass(frozen=True, slots=True)
class Image:
    """An encoded screenshot: the bytes as they go on the wire (before base64) and their media type."""

    data: bytes
    media_type: str
    width: int
    height: int
    region: tuple[int, int, int, int] | None = None  # x, y, width, height on the screen, when asked
    screen: tuple[int, int] | None = None  # the screen's width and height, when captured from one

    @property
    def scaled(self) -> bool:
        """Not the whole screen pixel for pixel: a client must map its coordinates back."""
        whole = self.screen is None or (self.width, self.height) == self.screen
        return self.region is not None or not whole


MEDIA_TYPES = {"png": "image/png", "jpeg": "image/jpeg", "webp": "image/webp"}


class Capturer:
    """Grabs the root window, through a ``SharedFrame`` when the server can (``path`` "shm"), else with
    GetImage over the socket ("getimage"); one grab at a time (the shared buffer is reused)."""

    def __init__(self, name: str, required: Requirements) -> None:
        self.name = name
        self.display = open_display(name, required)
        screen = self.display.screen()
        self.root = screen.root
        self.width, self.height = screen.width_in_pixels, screen.height_in_pixels
        try:
            with lost_display(name):
                self._shared = SharedFrame.attach(self.display, name)
        except BaseException:
            self.display.close()
            raise
        self.path: Literal["shm", "getimage"] = "shm" if self._shared is not None else "getimage"
        self.damage: DamageWatcher | None = None
        try:
            self.damage = open_watcher(name, required)
        except BaseException:
            self.close()
            raise
        # the last frame encoded per request (format, quality, size, region, compression), with the damage
        # count read before its grab
        self._frames: dict[FrameKey, tuple[int, Image]] = {}
        # the last scaled frame before encoding, per request of a size ``resample.by_rows`` serves: after a
        # small change only the rows around it are resampled
        self._scaled: dict[FrameKey, tuple[int, np.ndarray]] = {}
        # the damage count the shared frame is current for: after a change, only the rows drawn on are grabbed
        self._current: int | None = None
        self._lock = threading.Lock()
        self._closed = False

    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
            if self.damage is not None:
                self.damage.close()
            if self._shared is not None:
                self._shared.detach()
            with contextlib.suppress(Exception):  # the server may be gone already
                self.display.close()

    def ping(self) -> None:
        """One round trip to the server."""
        with self._lock, lost_display(self.name):
            self._check_open()
            self.display.get_input_focus()

    def screenshot(self, options: ScreenshotOptions = WHOLE) -> Image:
        """Capture and encode; the default (PNG, full size) is lossless. While nothing was drawn since the
        same screenshot was last taken, that one is returned: the same bytes a fresh capture would give."""
        key = self._key(options)
        fmt, quality, size, region, compression = key
        x, y, w, h = region or (0, 0, self.width, self.height)
        # fpng takes RGB; OpenCV's encoders (jpeg, webp, png at a compression level) take BGR
        rgb = fmt == "png" and compression is None
        conversion = cv2.COLOR_BGRA2RGB if rgb else cv2.COLOR_BGRA2BGR
        with self._lock, lost_display(self.name):
            self._check_open()
            damage = self.damage if self.damage is not None and self.damage.alive else None
            changes = damage.poll(sync=True) if damage is not None else -1
            cached = self._frames.get(key)
            if cached is not None and cached[0] == changes:
                return cached[1]  # nothing was drawn since it was captured
            kept = self._rows(key, damage, size) if region is None else None
            screen = self._grab(damage, changes)
            # fresh arrays (own memory): cvtColor drops the padding byte on the way
            if kept is not None:
                rows = [slice(*source_rows(h, size[1], resample)) for _, resample in kept[1]]
                pieces = [
                    (cv2.cvtColor(screen[r], conversion), b) for r, b in zip(rows, kept[1], strict=True)
                ]
            else:
                frame = cv2.cvtColor(screen[y : y + h, x : x + w], conversion)
        if kept is not None:
            frame = redo_rows(kept[0], pieces)
        elif damage is not None and region is None and by_rows((w, h), size):
            frame = downscale_whole(frame, size)
        image = replace(
            encode(frame, fmt, quality, size, compression), region=region, screen=(self.width, self.height)
        )
        if damage is not None:
            if len(self._frames) >= MAX_CACHED_FRAMES:
                self._frames.clear()
                self._scaled.clear()
            # kept once encoded: the next screenshot of its size resamples bands of it in place
            if frame.shape[:2] == (size[1], size[0]) and region is None and size != (w, h):
                self._scaled[key] = (changes, frame)
            self._frames[key] = (changes, image)
        heap.rest.busy()
        return image

    def again(self, options: ScreenshotOptions = WHOLE) -> Image | None:
        """The screenshot ``screenshot`` would serve again, or None; never waits for a capture in progress.
        One round trip on the damage connection, cheaper than the hop to a worker thread a capture takes."""
        damage = self.damage
        if damage is None or not damage.alive or not self._lock.acquire(blocking=False):
            return None
        try:
            with lost_display(self.name):
                self._check_open()
                cached = self._frames.get(self._key(options))
                changes = damage.poll(sync=True)
        finally:
            self._lock.release()
        return cached[1] if cached is not None and cached[0] == changes else None

    def _key(self, options: ScreenshotOptions) -> FrameKey:
        region = options.region.box if options.region is not None else None
        w, h = (region[2], region[3]) if region else (self.width, self.height)
        size = astuple(image_size(Size(w, h), options.width, options.scale, zoom=region is not None))
        return (options.format, options.quality, size, region, options.compression)

    def _rows(self, key: FrameKey, damage: DamageWatcher | None, size: tuple[int, int]) -> Kept | None:
        """The kept scaled frame and the bands of it to resample, when only bands of rows changed since it.
        Taken out of the kept ones either way: it is resampled in place (outside the lock), or it goes before
        a whole new one is made (3-4 MiB less at the peak)."""
        kept = self._scaled.pop(key, None)
        changed = damage.rows_since(kept[0]) if kept is not None and damage is not None else []
        if kept is None or not changed:
            return None
        redo = bands((self.width, self.height), size, changed)
        return (kept[1], redo) if redo is not None else None

    def _grab(self, damage: DamageWatcher | None = None, changes: int = -1) -> np.ndarray:
        """The screen as BGRX, valid until the next grab. With the ``damage`` watcher and the count
        ``changes`` just polled, the shared frame has the server copy only the rows drawn since its last grab
        (a pixel changed: one row against the 8 MB of the whole screen, 1.7 ms p50 less over HTTP)."""
        self._check_open()
        if self._shared is not None:
            current, self._current = self._current, None  # until the grab is through
            if damage is None or current is None:
                frame = self._shared.grab(self.root)
            else:
                for rows in damage.rows_since(current):
                    self._shared.grab(self.root, rows)
                frame = self._shared.frame
            self._current = changes if damage is not None else None
            return frame
        return grab_by_copy(self.root, self.width, self.height)

    def _check_open(self) -> None:
        if self._closed:  # dropped by another thread after a lost display
            raise display_lost(self.name, "the capture connection was closed")


def encode(
    frame: np.ndarray, fmt: str, quality: int, size: tuple[int, int], compression: int | None = None
) -> Image:
    """Encode an RGB (fast png) or BGR (png at a ``compression`` level, jpeg, webp) frame, downscaled as an
    area filter would (right for text, ``downscale``) and zoomed with INTER_CUBIC."""
    if size != (frame.shape[1], frame.shape[0]):
        up = size[0] > frame.shape[1]
        frame = cv2.resize(frame, size, interpolation=cv2.INTER_CUBIC) if up else downscale(frame, size)
    if fmt == "png" and compression is not None:
        _, buf = cv2.imencode(".png", frame, [cv2.IMWRITE_PNG_COMPRESSION, compression])
        data = buf.tobytes()
    elif fmt == "png":
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
