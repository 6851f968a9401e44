"""The screenshots the agent shows its model: a fallback resize, and waiting for the screen to settle."""

from __future__ import annotations

import asyncio
import io
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from deskpilot.computer.geometry import Size

# ----------------------------------------------------------------------------------------------- images


def resize_png(png: bytes, size: Size) -> bytes:
    """Downscale a PNG (area filter, fast settings); only for a desktop that did not scale it itself."""
    from PIL import Image

    with Image.open(io.BytesIO(png)) as im:
        small = im.convert("RGB").resize((size.width, size.height), Image.Resampling.BOX)
    out = io.BytesIO()
    small.save(out, format="PNG", compress_level=1)
    return out.getvalue()


# ----------------------------------------------------------------------------------------------- settle


@dataclass
class Settled:
    frame: str  # the last frame, as the desktop returned it (base64 PNG)
    stable: bool  # two consecutive frames were identical before the deadline
    frames: int  # screenshots taken
    seconds: float


async def settle(shoot: Callable[[], Awaitable[str]], within: float = 1.0, interval: float = 0.05) -> Settled:
    """Take frames until two in a row are identical (byte for byte), or `within` seconds have passed.

    Replaces a fixed sleep after each action: a static screen costs two screenshots `interval` apart;
    an animating one costs at most `within`. Frames are spaced from the *start* of the previous capture,
    so a slow screenshot eats into the interval instead of adding to it. The last frame is returned so
    it can go to the model as is.
    """
    start = time.monotonic()
    deadline = start + within
    prev_at = start
    prev = await shoot()
    frames = 1
    while True:
        now = time.monotonic()
        if now >= deadline:
            return Settled(prev, False, frames, now - start)
        await asyncio.sleep(max(0.0, min(prev_at + interval, deadline) - now))
        cur_at = time.monotonic()
        cur = await shoot()
        frames += 1
        if cur == prev:
            return Settled(cur, True, frames, time.monotonic() - start)
        prev, prev_at = cur, cur_at
