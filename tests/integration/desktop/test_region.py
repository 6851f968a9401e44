"""Region screenshots, zoom and PNG compression on a display of its own showing a known pattern: a region is
exactly those pixels of the screen, a zoom says where it came from, a compressed PNG holds the same pixels in
fewer bytes; without these options the answer is as before."""

from __future__ import annotations

import base64
from collections.abc import Iterator

import cv2
import pytest

from tests.integration.desktop.conftest import Desktop
from tests.integration.desktop.test_capture import rgb_of, scene, service


@pytest.fixture(scope="module")
def patterned() -> Iterator[Desktop]:
    with service([]) as desktop:
        yield desktop


def screenshot(desktop: Desktop, **options: object) -> dict:
    return desktop.act(action="screenshot", **options)["data"]


def test_a_region_is_exactly_those_pixels(patterned: Desktop) -> None:
    data = screenshot(patterned, region={"x": 100, "y": 40, "width": 320, "height": 200})
    assert (rgb_of(base64.b64decode(data["image"])) == scene()[40:240, 100:420]).all()
    assert data["region"] == {"x": 100, "y": 40, "width": 320, "height": 200}
    assert data["size"] == {"width": 320, "height": 200}


def test_a_zoom_scales_a_region_up_and_says_where_it_lies(patterned: Desktop) -> None:
    region = {"x": 1800, "y": 1000, "width": 120, "height": 80}
    data = screenshot(patterned, region=region, width=480)
    image = rgb_of(base64.b64decode(data["image"]))
    assert image.shape == (320, 480, 3) and data["size"] == {"width": 480, "height": 320}
    exact = cv2.resize(scene()[1000:1080, 1800:1920], (480, 320), interpolation=cv2.INTER_CUBIC)
    assert abs(image.astype(int) - exact).mean() < 1.0


def test_a_compressed_png_holds_the_same_pixels_in_fewer_bytes(patterned: Desktop) -> None:
    fast = base64.b64decode(screenshot(patterned)["image"])
    small = base64.b64decode(screenshot(patterned, compression=9)["image"])
    assert (rgb_of(small) == rgb_of(fast)).all()
    assert len(small) < len(fast)


def test_without_the_options_the_answer_is_as_before(patterned: Desktop) -> None:
    assert set(screenshot(patterned)) == {"image"}


@pytest.mark.parametrize(
    "options",
    [
        {"region": {"x": 1900, "y": 0, "width": 100, "height": 100}},
        {"region": {"x": 0, "y": 0, "width": 8, "height": 100}},
        {"region": {"x": 0, "y": 0, "width": 100}},
        {"region": {"x": 0, "y": 0, "width": 100, "height": 100, "z": 1}},
        {"format": "jpeg", "compression": 5},
        {"compression": 10},
    ],
)
def test_bad_options_are_a_400(patterned: Desktop, options: dict) -> None:
    r = patterned.post(action="screenshot", **options)
    assert r.status_code == 400, r.text
