"""The screen's geometry and the one mapping between screen pixels and a scaled image's pixels.

The desktop is 1920x1080 (``SCREEN``). A client that looks at screenshots scaled to another size (the agent's
model sees 1280x720 by default) maps every coordinate through `to_screen`, the inverse of `to_model`. Both
map pixel *centres* (image pixel i covers screen pixels [i*s, (i+1)*s) with s = screen/image), so 0 → 0, the
last image pixel → the last screen pixel, and the mapping round-trips.
"""

from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True)
class Size:
    width: int
    height: int

    def __str__(self) -> str:
        return f"{self.width}x{self.height}"


SCREEN = Size(1920, 1080)


def scaled_size(width: int, screen: Size = SCREEN) -> Size:
    """The screenshot size for a model that wants images `width` wide (never upscaled; aspect kept)."""
    width = max(1, min(width, screen.width))
    return Size(width, max(1, round(screen.height * width / screen.width)))


def _map(v: float, src: int, dst: int) -> int:
    if not math.isfinite(v):
        raise ValueError(f"coordinate {v!r} is not a finite number")
    out = math.floor((v + 0.5) * dst / src)
    return min(max(out, 0), dst - 1)


def to_screen(x: float, y: float, image: Size, screen: Size = SCREEN) -> tuple[int, int]:
    """A point on the `image` the model saw → the screen pixel under it (clamped onto the screen)."""
    return _map(x, image.width, screen.width), _map(y, image.height, screen.height)


def to_model(x: float, y: float, image: Size, screen: Size = SCREEN) -> tuple[int, int]:
    """A screen pixel → the pixel of the scaled `image` that shows it (clamped onto the image)."""
    return _map(x, screen.width, image.width), _map(y, screen.height, image.height)
