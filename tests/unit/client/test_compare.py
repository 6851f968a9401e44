"""The replay's frame comparison on synthetic frames the agent's size (1280x720 of a 1920x1080 screen): what a
person sees as different differs (a changed line of text, a dialog, a window moved 20 px), while colour noise,
a few stray pixels, the panel clock, a masked region and a text cursor do not; the thresholds hold exactly."""

from __future__ import annotations

import random
from collections.abc import Callable

import pytest
from PIL import Image, ImageDraw, ImageFont

from deskpilot.client.compare import (
    Rules,
    compare,
    diff_image,
    moved_pixels,
    to_frame,
)
from deskpilot.computer.geometry import SCREEN, clock

SIZE = (1280, 720)  # 16-px tiles: 80 x 45
TILES = 80 * 45
Change = Callable[[ImageDraw.ImageDraw], object]


def desktop() -> Image.Image:
    """A dark desktop with a terminal-like window of text, and a panel along the bottom."""
    frame = Image.new("RGB", SIZE, (29, 39, 58))
    draw = ImageDraw.Draw(frame)
    draw.rectangle((200, 100, 900, 500), fill=(0, 0, 0), outline=(200, 200, 200))
    font = ImageFont.load_default(size=11)
    for n, line in enumerate(["user@vm:~$ cat lines.txt", "alpha", "bravo", "charlie", "user@vm:~$"]):
        draw.text((206, 106 + 13 * n), line, font=font, fill=(220, 220, 220))
    draw.rectangle((0, 699, 1279, 719), fill=(246, 245, 244))
    return frame


def changed(*draws: Change) -> Image.Image:
    frame = desktop()
    for draw in draws:
        draw(ImageDraw.Draw(frame))
    return frame


def test_the_same_frame_matches_and_the_clock_is_left_out() -> None:
    c = compare(desktop(), desktop())
    assert c.matched and c.changed == 0 and c.tile == 16
    assert c.masks == [(1233, 698, 1280, 720)]  # 70x32 screen pixels, bottom right
    assert c.tiles == TILES - 2  # the two tiles wholly under the clock are not compared


def test_colour_noise_within_the_threshold_and_a_few_stray_pixels_match() -> None:
    rng = random.Random(7)
    noisy = desktop().point(lambda v: min(255, v + 32))  # every pixel, every channel: 32 levels
    assert compare(desktop(), noisy).matched
    stray = desktop()
    for i in range(80):  # 5 pixels in each of 80 tiles: 5 of 256 is within 2 %
        for _ in range(5):
            stray.putpixel((i * 16 + rng.randrange(16), 200 + rng.randrange(16)), (255, 0, 0))
    assert compare(desktop(), stray).matched
    assert not compare(desktop(), desktop().point(lambda v: min(255, v + 33))).matched


def test_a_tile_differs_past_its_share_of_moved_pixels() -> None:
    def dots(count: int) -> Image.Image:
        frame = desktop()
        for n in range(count):  # all within the tile at (32, 32), spread out
            frame.putpixel((33 + 3 * (n % 5), 33 + 3 * (n // 5)), (255, 255, 0))
        return frame

    assert compare(desktop(), dots(5)).matched  # 5 of 256 <= 0.02
    c = compare(desktop(), dots(6))
    assert c.differing == [(32, 32, 48, 48)] and c.regions == [(32, 32, 48, 48)]
    assert c.changed == pytest.approx(1 / c.tiles)
    assert compare(desktop(), dots(6), Rules(tolerance=0.1)).matched  # up to 25 pixels a tile
    assert not compare(desktop(), dots(6), Rules(tolerance=0.0)).matched


@pytest.mark.parametrize(
    "change",
    [
        pytest.param(
            lambda d: d.text((206, 132), "delta", font=ImageFont.load_default(size=11), fill=(220, 220, 220)),
            id="a changed line of text",
        ),
        pytest.param(lambda d: d.rectangle((500, 250, 700, 350), fill=(240, 240, 240)), id="a dialog"),
        pytest.param(lambda d: d.rectangle((40, 40, 120, 80), outline=(200, 200, 200)), id="a window"),
    ],
)
def test_what_a_person_sees_as_different_differs(change: Change) -> None:
    c = compare(desktop(), changed(change))
    assert not c.matched and c.regions


def test_a_changed_line_of_text_differs_where_it_is() -> None:
    font = ImageFont.load_default(size=11)
    recorded, replayed = desktop(), desktop()
    ImageDraw.Draw(replayed).rectangle((206, 132, 260, 144), fill=(0, 0, 0))
    ImageDraw.Draw(replayed).text((206, 132), "delta", font=font, fill=(220, 220, 220))
    c = compare(recorded, replayed)
    assert not c.matched
    x0, y0, x1, y1 = c.regions[0]
    assert x0 <= 206 and y0 <= 132 and x1 >= 230 and y1 >= 144 and y1 - y0 <= 32


def test_a_window_moved_20_screen_pixels_differs() -> None:
    def window(x: int) -> Image.Image:
        frame = desktop()
        ImageDraw.Draw(frame).rectangle((x, 550, x + 300, 650), fill=(240, 240, 240), outline=(90, 90, 90))
        return frame

    c = compare(window(300), window(300 + round(20 * 1280 / 1920)))
    assert not c.matched and len(c.differing) >= 10


def test_a_difference_of_another_size_is_all_different() -> None:
    c = compare(desktop(), desktop().resize((1024, 576)))
    assert not c.matched and len(c.differing) == c.tiles


def test_the_clock_and_the_masks_are_never_compared() -> None:
    assert clock(SCREEN) == (1850, 1048, 70, 32)
    assert to_frame((300, 150, 30, 30), SIZE, SCREEN) == (200, 100, 220, 120)
    assert to_frame((301, 151, 1, 1), SIZE, SCREEN) == (200, 100, 202, 102)  # each frame pixel showing it
    ticked = changed(lambda d: d.rectangle((1240, 702, 1275, 717), fill=(0, 0, 0)))
    assert compare(desktop(), ticked).matched
    beside = changed(lambda d: d.rectangle((1200, 702, 1232, 717), fill=(0, 0, 0)))
    assert not compare(desktop(), beside).matched
    dialog = changed(lambda d: d.rectangle((500, 250, 700, 350), fill=(240, 240, 240)))
    assert compare(desktop(), dialog, Rules(masks=((750, 375, 302, 152),))).matched  # 500..700 drawn
    c = compare(desktop(), dialog, Rules(masks=((750, 375, 150, 152),)))  # its left half
    assert not c.matched and all(x0 >= 592 for x0, *_ in c.differing)  # the tile of x=600 on


def test_a_text_cursor_alone_is_let_pass_but_not_beside_a_change() -> None:
    def bar(width: int, height: int, x: int = 400, y: int = 304) -> Change:
        return lambda d: d.rectangle((x, y, x + width - 1, y + height - 1), fill=(255, 255, 255))

    c = compare(desktop(), changed(bar(1, 12)))
    assert c.matched and c.carets == [(400, 304, 401, 316)]
    assert compare(desktop(), changed(bar(1, 12, y=298))).matched  # across two tiles
    assert compare(desktop(), changed(bar(3, 28))).matched  # 3x40 screen pixels, resampled
    assert not compare(desktop(), changed(bar(4, 12))).matched  # wider: a glyph, a border
    assert not compare(desktop(), changed(bar(1, 29))).matched  # taller: a line, a window's edge
    glyph = bar(6, 8, x=403, y=306)  # a character typed before it
    assert not compare(desktop(), changed(bar(1, 12), glyph)).matched


def test_the_threshold_is_per_pixel_in_any_channel() -> None:
    base = Image.new("RGB", (4, 1), (100, 100, 100))
    other = base.copy()
    other.putpixel((0, 0), (132, 100, 100))  # 32: not moved
    other.putpixel((1, 0), (100, 100, 67))  # 33 in one channel: moved
    other.putpixel((2, 0), (120, 120, 120))  # 20 in each: not moved
    assert list(moved_pixels(base, other, 32).tobytes()) == [0, 255, 0, 0]
    assert list(moved_pixels(base, other, 10).tobytes()) == [255, 255, 255, 0]


def test_the_diff_marks_differing_pixels_in_red_and_outlines_them() -> None:
    dialog = changed(lambda d: d.rectangle((500, 250, 700, 350), fill=(240, 240, 240)))
    cursor = changed(lambda d: d.rectangle((1000, 600, 1000, 611), fill=(255, 255, 255)))
    cursor.paste(dialog.crop((480, 240, 720, 360)), (480, 240))
    c = compare(desktop(), cursor)
    diff = diff_image(cursor, c)
    assert diff.size == SIZE
    assert diff.getpixel((600, 300)) == (255, 0, 0)  # inside the dialog
    assert diff.getpixel((1000, 605)) == (255, 128, 0)  # the cursor: moved, let pass
    x0, y0, _, _ = c.regions[0]
    assert diff.getpixel((x0, y0)) == (255, 255, 0)  # the group's outline
    assert diff.getpixel((100, 600)) == (29 // 3, 39 // 3, 58 // 3)  # the rest dimmed
