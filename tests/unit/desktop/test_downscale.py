"""Scaled screenshots: the fast downscale matches the exact area filter closely on text (what keeps it
legible), at the widths models ask for; at an integer ratio it is the exact filter."""

from __future__ import annotations

import cv2
import numpy as np
import pytest

from deskpilot.desktop.resample import downscale, downscale_whole


@pytest.fixture(scope="module")
def text_frame() -> np.ndarray:
    """A 1920x1080 RGB frame of small dark text on white, the hardest case for aliasing."""
    rng = np.random.default_rng(7)
    frame = np.full((1080, 1920, 3), 255, np.uint8)
    for _ in range(4000):
        x, y = (int(v) for v in rng.integers(0, (1900, 1070)))
        cv2.putText(frame, "Hello", (x, y), cv2.FONT_HERSHEY_SIMPLEX, 0.4, (0, 0, 0), 1)
    return frame


@pytest.mark.parametrize(("width", "least_psnr"), [(1366, 34.0), (1280, 33.0), (1024, 45.0)])
def test_close_to_the_exact_area_filter(text_frame: np.ndarray, width: int, least_psnr: float) -> None:
    size = (width, round(1080 * width / 1920))
    exact = cv2.resize(text_frame, size, interpolation=cv2.INTER_AREA)
    fast = downscale(text_frame, size)
    assert fast.shape == exact.shape
    assert cv2.PSNR(fast, exact) >= least_psnr
    assert np.percentile(np.abs(fast.astype(int) - exact.astype(int)), 99.9) <= 30  # no stray dark pixels


@pytest.mark.parametrize(("width", "least_psnr"), [(1366, 34.0), (1280, 33.0)])
def test_a_change_spanning_the_screen_is_as_close(
    text_frame: np.ndarray, width: int, least_psnr: float
) -> None:
    """What a scaled screenshot after a change spanning the screen resamples: the frame cut in two bands on
    two threads, as close to the exact area filter as ``downscale``."""
    size = (width, round(1080 * width / 1920))
    exact = cv2.resize(text_frame, size, interpolation=cv2.INTER_AREA)
    whole = downscale_whole(text_frame, size)
    assert cv2.PSNR(whole, exact) >= least_psnr
    assert np.percentile(np.abs(whole.astype(int) - exact.astype(int)), 99.9) <= 30


@pytest.mark.parametrize("size", [(960, 540), (1440, 810), (480, 270)])
def test_an_integer_ratio_or_one_near_1_is_the_exact_filter(
    text_frame: np.ndarray, size: tuple[int, int]
) -> None:
    exact = cv2.resize(text_frame, size, interpolation=cv2.INTER_AREA)
    assert np.array_equal(downscale(text_frame, size), exact)
