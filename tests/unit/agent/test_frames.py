"""Mapping between the model's scaled screenshots and the 1920x1080 screen; settle detection."""

from __future__ import annotations

import io
import math

import pytest
from PIL import Image

from deskpilot.agent.frames import resize_png, settle
from deskpilot.computer.geometry import SCREEN, Size, png_size, scaled_size, to_model, to_screen

HD = Size(1280, 720)


def test_model_size_keeps_the_aspect_and_never_upscales() -> None:
    assert scaled_size(1280) == HD
    assert scaled_size(1024) == Size(1024, 576)
    assert scaled_size(1920) == SCREEN
    assert scaled_size(4000) == SCREEN


def test_origin_maps_to_origin() -> None:
    assert to_screen(0, 0, HD) == (0, 0)
    assert to_model(0, 0, HD) == (0, 0)


def test_last_model_pixel_maps_to_last_screen_pixel() -> None:
    assert to_screen(1279, 719, HD) == (1919, 1079)
    assert to_model(1919, 1079, HD) == (1279, 719)


def test_coordinates_beyond_the_image_are_clamped_onto_the_screen() -> None:
    assert to_screen(1280, 720, HD) == (1919, 1079)
    assert to_screen(5000, -40, HD) == (1919, 0)
    assert to_screen(-0.4, -1, HD) == (0, 0)


def test_a_model_pixel_maps_to_the_centre_of_its_screen_block() -> None:
    # model pixel 1 covers screen [1.5, 3.0): centre 2.25 -> pixel 2; pixel 640 covers [960, 961.5) -> 960
    assert to_screen(1, 1, HD) == (2, 2)
    assert to_screen(640, 360, HD) == (960, 540)
    # fractional model coordinates are honoured rather than truncated first
    assert to_screen(100.9, 50.2, HD) == (152, 76)  # truncating 50.2 first would give 75


def test_screen_to_model_and_back_stays_within_one_scale_step() -> None:
    step = math.ceil(SCREEN.width / HD.width)
    for x in range(0, 1920, 37):
        for y in (0, 1, 539, 540, 1078, 1079):
            mx, my = to_model(x, y, HD)
            sx, sy = to_screen(mx, my, HD)
            assert abs(sx - x) <= step and abs(sy - y) <= step


def test_model_to_screen_to_model_is_the_identity() -> None:
    for x in range(1280):
        assert to_model(*to_screen(x, x * 719 // 1279, HD), HD) == (x, x * 719 // 1279)


def test_identity_when_the_model_sees_the_full_screen() -> None:
    for v in (0, 1, 959, 1919):
        assert to_screen(v, min(v, 1079), SCREEN) == (v, min(v, 1079))


def test_non_finite_coordinates_are_rejected() -> None:
    with pytest.raises(ValueError):
        to_screen(math.nan, 0, HD)


def _png(size: Size, color=(10, 20, 30)) -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (size.width, size.height), color).save(out, format="PNG")
    return out.getvalue()


def test_png_size_reads_the_header_and_resize_scales() -> None:
    big = _png(SCREEN)
    assert png_size(big) == SCREEN
    small = resize_png(big, HD)
    assert png_size(small) == HD
    with Image.open(io.BytesIO(small)) as im:
        assert im.getpixel((0, 0)) == (10, 20, 30)
    with pytest.raises(ValueError):
        png_size(b"GIF89a....")


@pytest.mark.anyio
async def test_settle_returns_after_two_identical_frames() -> None:
    frames = iter(["a", "b", "c", "c", "d"])

    async def shoot() -> str:
        return next(frames)

    s = await settle(shoot, within=1, interval=0.001)
    assert (s.frame, s.stable, s.frames) == ("c", True, 4)


@pytest.mark.anyio
async def test_settle_on_a_static_screen_takes_two_frames() -> None:
    async def shoot() -> str:
        return "same"

    s = await settle(shoot, within=1, interval=0.01)
    assert s.stable and s.frames == 2 and s.seconds < 0.5


@pytest.mark.anyio
async def test_settle_gives_up_at_the_deadline_on_a_changing_screen() -> None:
    n = 0

    async def shoot() -> str:
        nonlocal n
        n += 1
        return str(n)

    s = await settle(shoot, within=0.2, interval=0.02)
    assert not s.stable
    assert 0.19 <= s.seconds < 0.6
    assert s.frame == str(n)


@pytest.mark.anyio
async def test_settle_spaces_frames_from_the_start_of_the_previous_capture() -> None:
    import time

    import anyio

    starts: list[float] = []

    async def slow_shoot() -> str:  # a capture slower than the interval
        starts.append(time.monotonic())
        await anyio.sleep(0.06)
        return "same"

    s = await settle(slow_shoot, within=1, interval=0.05)
    assert s.stable and s.frames == 2
    # the second capture starts as soon as the first ends (60 ms), not 50 ms after it (110 ms)
    assert starts[1] - starts[0] < 0.1
