"""The screen's geometry and the one mapping between screen pixels and a scaled image's pixels.

The desktop is 1920x1080 (``SCREEN``). A client that looks at screenshots scaled to another size (the agent's
model sees 1280x720 by default), or at a region of the screen zoomed, maps every coordinate through
`to_screen`, the inverse of `to_model`. Both map pixel *centres* (image pixel i covers screen pixels
[i*s, (i+1)*s) with s = area/image), so 0 → 0, the last image pixel → the last pixel of the area, and the
mapping round-trips. `image_size` is the size a screenshot of an area comes out at; the desktop captures
with it and the ``space`` of a coordinate action (``deskpilot.computer.fields``) maps back with it.
"""

from __future__ import annotations

import math
import struct
from dataclasses import dataclass


@dataclass(frozen=True)
class Size:
    width: int
    height: int

    def __str__(self) -> str:
        return f"{self.width}x{self.height}"


SCREEN = Size(1920, 1080)
# The panel clock, the rightmost item of the 32-px panel along the bottom of the appliance's desktop (the
# home's xfce4-panel.xml): the one thing on a still desktop that draws on its own, once a minute.
CLOCK = Size(70, 32)


def clock(screen: Size = SCREEN) -> tuple[int, int, int, int]:
    """Where the panel clock is on ``screen`` (x, y, width, height): its bottom-right corner."""
    return screen.width - CLOCK.width, screen.height - CLOCK.height, CLOCK.width, CLOCK.height


def scaled_size(width: int, screen: Size = SCREEN) -> Size:
    """The screenshot size for a model that wants images `width` wide (never upscaled; aspect kept)."""
    width = max(1, min(width, screen.width))
    return Size(width, max(1, round(screen.height * width / screen.width)))


def _map(v: float, src: int, dst: int) -> int:
    if not math.isfinite(v):
        raise ValueError(f"coordinate {v!r} is not a finite number")
    out = math.floor((v + 0.5) * dst / src)
    return min(max(out, 0), dst - 1)


def image_size(area: Size, width: int | None, scale: float | None, zoom: bool = False) -> Size:
    """The size of a screenshot of ``area`` asked for at ``width`` or ``scale``: downscaled only, unless
    ``zoom`` (a region) lets ``width`` scale it up too; the aspect is kept."""
    if width is not None and (width < area.width or zoom):
        return Size(width, max(1, round(area.height * width / area.width)))
    if scale is not None and scale < 1:
        return Size(max(1, round(area.width * scale)), max(1, round(area.height * scale)))
    return area


def to_screen(
    x: float, y: float, image: Size, screen: Size = SCREEN, origin: tuple[int, int] = (0, 0)
) -> tuple[int, int]:
    """A point on the `image` the model saw → the screen pixel under it (clamped onto the screen, or onto
    the area of ``screen`` pixels at ``origin`` the image shows)."""
    return origin[0] + _map(x, image.width, screen.width), origin[1] + _map(y, image.height, screen.height)


def to_model(x: float, y: float, image: Size, screen: Size = SCREEN) -> tuple[int, int]:
    """A screen pixel → the pixel of the scaled `image` that shows it (clamped onto the image)."""
    return _map(x, screen.width, image.width), _map(y, screen.height, image.height)


def screen_rect(
    x: int, y: int, width: int, height: int, image: Size, screen: Size = SCREEN, least: int = 16
) -> tuple[int, int, int, int] | None:
    """A rectangle of the `image` → the screen pixels it shows (x, y, width, height), cut to the image and
    grown to at least `least` pixels each way within the screen; None when it lies off the image."""
    last_x, last_y = min(x + width, image.width) - 1, min(y + height, image.height) - 1
    if x > last_x or y > last_y or x < 0 or y < 0:
        return None
    x0, y0 = to_screen(x, y, image, screen)
    x1, y1 = to_screen(last_x, last_y, image, screen)
    w, h = max(x1 - x0 + 1, least), max(y1 - y0 + 1, least)
    return min(x0, screen.width - w), min(y0, screen.height - h), w, h


def png_size(png: bytes) -> Size:
    """Width and height from a PNG's IHDR chunk, without decoding the image."""
    if png[:8] != b"\x89PNG\r\n\x1a\n" or png[12:16] != b"IHDR":
        raise ValueError("not a PNG image")
    width, height = struct.unpack(">II", png[16:24])
    return Size(width, height)
