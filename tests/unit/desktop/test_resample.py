"""Re-doing only the rows a change touched gives the bytes resampling the whole frame gives."""

from __future__ import annotations

import cv2
import numpy as np
import pytest

from deskpilot.desktop.resample import band, downscale, redo_rows, source_rows

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
    replace, resample = rows
    lo, hi = source_rows(FULL[1], size[1], resample)
    redone = redo_rows(downscale(before, size), after[lo:hi], replace, resample)
    assert np.array_equal(redone, downscale(after, size))


@pytest.mark.parametrize(
    ("size", "top", "bottom"),
    [((1440, 810), 10, 20), ((960, 540), 10, 20), ((1200, 675), 10, 20), ((1366, 768), 0, 1000)],
    ids=["the exact area filter", "an integer ratio", "rows not on a binary grid", "most of the frame"],
)
def test_otherwise_the_whole_frame_is_resampled(size: tuple[int, int], top: int, bottom: int) -> None:
    assert band(FULL, size, top, bottom) is None
