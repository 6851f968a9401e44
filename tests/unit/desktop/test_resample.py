"""Re-doing only the rows a change touched gives the bytes resampling the whole frame gives."""

from __future__ import annotations

import itertools

import cv2
import numpy as np
import pytest

from deskpilot.desktop.resample import band, bands, downscale, downscale_whole, redo_rows, source_rows

FULL = (1920, 1080)


def text_frame(seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    frame = rng.integers(0, 256, (1080, 1920, 3), np.uint8)
    for _ in range(3000):
        x, y = (int(v) for v in rng.integers(0, (1900, 1070)))
        cv2.putText(frame, "Hello", (x, y), cv2.FONT_HERSHEY_SIMPLEX, 0.4, (0, 0, 0), 1)
    return frame


@pytest.mark.parametrize("width", [1366, 1280, 1024])
@pytest.mark.parametrize(("top", "bottom"), [(0, 1), (1079, 1080), (500, 501), (37, 260), (700, 1080)])
def test_a_band_redone_is_the_whole_frame_resampled(width: int, top: int, bottom: int) -> None:
    size = (width, round(1080 * width / 1920))
    before, after = text_frame(1), text_frame(1)
    after[top:bottom] = text_frame(2)[top:bottom]  # what changed
    rows = band(FULL, size, top, bottom)
    assert rows is not None, "these sizes resample by rows"
    lo, hi = source_rows(FULL[1], size[1], rows[1])
    redone = redo_rows(downscale(before, size), [(after[lo:hi], rows)])
    assert np.array_equal(redone, downscale(after, size))


@pytest.mark.parametrize("width", [1366, 1280])
@pytest.mark.parametrize(
    "changed",
    [[(0, 1), (1079, 1080)], [(10, 20), (40, 60), (500, 520), (900, 901)], [(100, 110), (111, 130)]],
    ids=["two corners", "four bands", "two that meet"],
)
def test_bands_redone_are_the_whole_frame_resampled(width: int, changed: list[tuple[int, int]]) -> None:
    size = (width, round(1080 * width / 1920))
    before, after = text_frame(1), text_frame(1)
    for top, bottom in changed:
        after[top:bottom] = text_frame(2)[top:bottom]
    redo = bands(FULL, size, changed)
    assert redo is not None
    assert all(a[0][1] < b[0][0] for a, b in itertools.pairwise(redo)), "bands that meet are joined"
    pieces = [(after[slice(*source_rows(FULL[1], size[1], b[1]))], b) for b in redo]
    assert np.array_equal(redo_rows(downscale(before, size), pieces), downscale(after, size))


def test_bands_as_much_as_the_frame_are_the_whole_frame() -> None:
    assert bands(FULL, (1366, 768), [(0, 300), (400, 700), (800, 1080)]) is None


@pytest.mark.parametrize(
    ("size", "top", "bottom"),
    [((1440, 810), 10, 20), ((960, 540), 10, 20), ((1200, 675), 10, 20), ((1366, 768), 0, 1000)],
    ids=["the exact area filter", "an integer ratio", "rows not on a binary grid", "most of the frame"],
)
def test_otherwise_the_whole_frame_is_resampled(size: tuple[int, int], top: int, bottom: int) -> None:
    assert band(FULL, size, top, bottom) is None


@pytest.mark.parametrize("width", [1366, 1280, 1024, 1440, 1200, 960])
def test_the_whole_frame_on_two_threads_is_the_whole_frame_resampled(width: int) -> None:
    size = (width, round(1080 * width / 1920))
    frame = text_frame(3)
    assert np.array_equal(downscale_whole(frame, size), downscale(frame, size))
