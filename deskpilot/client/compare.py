"""Comparing a replayed frame with the recorded one as a person would: by tiles, not by a share of the screen.

A pixel *moved* when its colour changed by more than ``threshold`` levels (of 255) in any channel: smaller
changes are antialiasing and resampling, not a different screen. The frame is cut into square tiles of
``TILE`` screen pixels (16 frame pixels on the agent's 1280-wide frames); a tile *differs* when more than
``tolerance`` of its pixels moved (6 of a 16x16 tile). So one changed line of text, a dialog, a window moved
by a few pixels or another file name differs, however small a share of the screen it is.

Two things on a still desktop change on their own and are never a divergence:

- the panel clock (``geometry.clock``, the bottom-right corner of the screen, measured on the appliance's
  xfce4-panel), masked like the caller's ``masks`` (screen pixels, mapped onto the frame's scale): a masked
  pixel never moves;
- a text cursor: differing tiles are grouped (touching, diagonals included), and a group whose moved pixels
  all fit in a thin upright bar (``CARET``: 3x40 screen pixels, plus one frame pixel for the resampling) is
  let pass. Any other difference beside it makes its group wider, so it still fails.
"""

from __future__ import annotations

import array
import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from deskpilot.computer.geometry import SCREEN, Size, clock

if TYPE_CHECKING:  # Pillow is the `client` extra's, imported where used: the CLI reads the settings below
    from PIL import Image

THRESHOLD = 32  # levels of 255, in any channel
TILE = 24  # screen pixels a side
TOLERANCE = 0.02  # share of a tile's pixels that may move
CARET = (3, 40)  # screen pixels: the widest and tallest difference let pass as a text cursor

Box = tuple[int, int, int, int]  # x, y, width, height
Corners = tuple[int, int, int, int]  # left, top, right, bottom (exclusive)


@dataclass(frozen=True)
class Rules:
    """How frames are compared; ``masks`` are screen pixels never compared (the clock's always added)."""

    threshold: int = THRESHOLD
    tolerance: float = TOLERANCE
    masks: tuple[Box, ...] = ()
    screen: Size = SCREEN


@dataclass
class Comparison:
    tile: int  # frame pixels a side
    tiles: int  # tiles compared (not wholly masked)
    moved: Image.Image  # mode L: 255 where a pixel moved, masks left out
    differing: list[Corners] = field(default_factory=list)  # the tiles that differ
    regions: list[Corners] = field(default_factory=list)  # each group of them, its bounding box
    carets: list[Corners] = field(default_factory=list)  # the groups let pass as a text cursor
    masks: list[Corners] = field(default_factory=list)

    @property
    def matched(self) -> bool:
        return not self.differing

    @property
    def changed(self) -> float:
        """The share of the compared tiles that differ."""
        return len(self.differing) / max(1, self.tiles)


def to_frame(box: Box, size: tuple[int, int], screen: Size) -> Corners:
    """Screen pixels → the frame pixels that show any of them."""
    sx, sy = size[0] / screen.width, size[1] / screen.height
    x, y, w, h = box
    return math.floor(x * sx), math.floor(y * sy), math.ceil((x + w) * sx), math.ceil((y + h) * sy)


def moved_pixels(expected: Image.Image, got: Image.Image, threshold: int) -> Image.Image:
    """255 where a pixel's colour moved by more than ``threshold`` in any channel; all of it when the sizes
    differ (the screen is not the one recorded)."""
    from PIL import Image, ImageChops

    if expected.size != got.size:
        return Image.new("L", expected.size, 255)
    r, g, b = ImageChops.difference(expected.convert("RGB"), got.convert("RGB")).split()
    most = ImageChops.lighter(ImageChops.lighter(r, g), b)
    return most.point(lambda v: 255 if v > threshold else 0)


def _shares(image: Image.Image, tile: int) -> list[float]:
    """Each tile's mean of ``image`` (mode L) over 255, row by row; a partial tile over its own pixels."""
    reduced = image.convert("F").reduce(tile)
    return [v / 255 for v in array.array("f", reduced.tobytes())]


def _groups(cells: set[tuple[int, int]]) -> list[list[tuple[int, int]]]:
    """The cells grouped by touching (8 neighbours)."""
    left, groups = set(cells), []
    while left:
        stack, group = [left.pop()], []
        while stack:
            i, j = stack.pop()
            group.append((i, j))
            for n in [(i + di, j + dj) for di in (-1, 0, 1) for dj in (-1, 0, 1)]:
                if n in left:
                    left.remove(n)
                    stack.append(n)
        groups.append(group)
    return groups


def bounds(boxes: Iterable[Corners]) -> Corners:
    x0, y0, x1, y1 = zip(*boxes, strict=True)
    return min(x0), min(y0), max(x1), max(y1)


def compare(expected: Image.Image, got: Image.Image, rules: Rules = Rules()) -> Comparison:
    """``got`` against ``expected`` (the recorded frame, whose size and scale count), tile by tile."""
    from PIL import Image, ImageDraw

    size, screen = expected.size, rules.screen
    tile = max(4, round(TILE * size[0] / screen.width))
    masks = [to_frame(box, size, screen) for box in (clock(screen), *rules.masks)]
    moved = moved_pixels(expected, got, rules.threshold)
    hidden = Image.new("L", size, 0)
    for x0, y0, x1, y1 in masks:
        ImageDraw.Draw(moved).rectangle((x0, y0, x1 - 1, y1 - 1), fill=0)
        ImageDraw.Draw(hidden).rectangle((x0, y0, x1 - 1, y1 - 1), fill=255)
    compared = sum(share < 1 for share in _shares(hidden, tile))
    result = Comparison(tile, compared, moved, masks=masks)
    columns = math.ceil(size[0] / tile)
    over = {divmod(n, columns)[::-1] for n, s in enumerate(_shares(moved, tile)) if s > rules.tolerance}
    caret = _caret(size, screen)
    for group in _groups(over):
        cells = [_cell(i, j, tile, size) for i, j in group]
        drawn = _drawn(moved, cells)
        if drawn[2] - drawn[0] <= caret[0] and drawn[3] - drawn[1] <= caret[1]:
            result.carets.append(drawn)
        else:
            result.differing += cells
            result.regions.append(bounds(cells))
    return result


def _cell(i: int, j: int, tile: int, size: tuple[int, int]) -> Corners:
    return i * tile, j * tile, min(size[0], (i + 1) * tile), min(size[1], (j + 1) * tile)


def _caret(size: tuple[int, int], screen: Size) -> tuple[int, int]:
    """The largest text cursor in frame pixels: one more each way, for a line resampled across two."""
    return (
        math.ceil(CARET[0] * size[0] / screen.width) + 1,
        math.ceil(CARET[1] * size[1] / screen.height) + 1,
    )


def _drawn(moved: Image.Image, cells: list[Corners]) -> Corners:
    """The bounding box of the moved pixels within ``cells`` (each has some: it differs)."""
    boxes = []
    for cell in cells:
        x0, y0, x1, y1 = moved.crop(cell).getbbox() or (0, 0, 0, 0)
        boxes.append((cell[0] + x0, cell[1] + y0, cell[0] + x1, cell[1] + y1))
    return bounds(boxes)


RED, ORANGE, YELLOW, BLUE, GREY = (255, 0, 0), (255, 128, 0), (255, 255, 0), (0, 160, 255), (160, 160, 160)


def diff_image(got: Image.Image, comparison: Comparison) -> Image.Image:
    """The replayed frame dimmed; the moved pixels of differing tiles in red, the others (let pass) in
    orange; each group of differing tiles outlined in yellow, the masks in blue, a text cursor in grey."""
    from PIL import Image, ImageChops, ImageDraw

    size = comparison.moved.size
    base = got.convert("RGB").resize(size).point(lambda v: v // 3)
    differing = Image.new("L", size, 0)
    for x0, y0, x1, y1 in comparison.differing:
        ImageDraw.Draw(differing).rectangle((x0, y0, x1 - 1, y1 - 1), fill=255)
    base.paste(ORANGE, mask=ImageChops.subtract(comparison.moved, differing))
    base.paste(RED, mask=ImageChops.multiply(comparison.moved, differing))
    draw = ImageDraw.Draw(base)
    for boxes, colour, margin in (
        (comparison.masks, BLUE, 0),
        (comparison.carets, GREY, 2),  # around it: a cursor is thinner than its outline
        (comparison.regions, YELLOW, 0),
    ):
        for x0, y0, x1, y1 in boxes:
            draw.rectangle((x0 - margin, y0 - margin, x1 - 1 + margin, y1 - 1 + margin), outline=colour)
    return base
