"""Downscaling screenshots, and re-doing only the rows a change touched.

A scaled screenshot costs its resampling (~7 ms at 1366 wide on one core of this project's VM, against ~3 ms
for fpng to encode the whole full-size frame), so a scaled frame was slower than a full one. The service
knows where the screen changed (damage boxes), so it keeps the last scaled frame of each size and resamples
only a band of rows around the change: a band whose edges lie on the grid where source and output rows meet
exactly, widened by one period of that grid on each side and cut back, gives the same bytes as resampling
the whole frame (the row positions of the linear step are exact binary fractions when its row scale is one;
tests/unit/desktop/test_resample.py compares them bit for bit).
"""

from __future__ import annotations

from fractions import Fraction

import cv2
import numpy as np

WHOLE_SHARE = 0.6  # a band of more output rows than this share of the frame: resample the whole frame


def two_step(full_width: int, width: int) -> bool:
    """Whether ``downscale`` resizes linearly to twice the size and then halves by area."""
    return full_width // 2 < width and width * 100 <= full_width * 72


def downscale(frame: np.ndarray, size: tuple[int, int]) -> np.ndarray:
    """``frame`` at ``size``, as the exact area filter makes it (each output pixel the mean of what it
    covers, so text stays legible) but twice as fast at the ratios models ask for (1/2 to 0.72: 961 to 1382
    of 1920): OpenCV's area filter is quick only at integer ratios, so the frame is first resized linearly
    to twice the size, then halved by area. Against the exact filter, PSNR 34-49 dB on text at 1366, 1280
    and 1024 wide (tests/unit/desktop/test_downscale.py); 3.8-7 against 7.7-15 ms at 1366 wide on this
    project's 2-CPU VM. Closer to 1 the linear step shifts more than it saves: the exact filter does it."""
    width, height = size
    if two_step(frame.shape[1], width):
        double = cv2.resize(frame, (2 * width, 2 * height), interpolation=cv2.INTER_LINEAR)
        return cv2.resize(double, size, interpolation=cv2.INTER_AREA)
    return cv2.resize(frame, size, interpolation=cv2.INTER_AREA)


def by_rows(full: tuple[int, int], size: tuple[int, int]) -> bool:
    """Whether a band of rows of this size can be resampled alone (``band``): the two-step filter, with row
    positions that are exact binary fractions."""
    linear_rows = Fraction(full[1], 2 * size[1])  # the linear step's source rows per row
    return two_step(full[0], size[0]) and not linear_rows.denominator & (linear_rows.denominator - 1)


def band(
    full: tuple[int, int], size: tuple[int, int], top: int, bottom: int
) -> tuple[tuple[int, int], tuple[int, int]] | None:
    """For source rows [top, bottom) changed in a ``full`` (width, height) frame scaled to ``size``: the
    output rows to replace, and the output rows to resample for them (with a margin, aligned on the grid),
    or None when only resampling the whole frame gives the same bytes (or is as cheap)."""
    if not by_rows(full, size):
        return None
    full_height, height = full[1], size[1]
    rows = Fraction(full_height, height)  # source rows per output row; `period` output rows are whole
    period = rows.denominator
    # an output row reads the source rows it covers and one more on each side (the linear step's taps)
    first = max(0, int(top / rows) - 1) // period * period
    last = min(height, -(-(int(bottom / rows) + 2) // period) * period)
    if last - first > height * WHOLE_SHARE:
        return None
    return (first, last), (max(0, first - period), min(height, last + period))


def redo_rows(
    previous: np.ndarray, source: np.ndarray, replace: tuple[int, int], resample: tuple[int, int]
) -> np.ndarray:
    """``previous`` (a scaled frame) with the output rows ``replace`` resampled from ``source``, the full
    frame's rows (``source_rows``) for the output rows ``resample`` (as ``band`` gave them); a new array."""
    width = previous.shape[1]
    fresh = downscale(source, (width, resample[1] - resample[0]))
    out = previous.copy()
    out[replace[0] : replace[1]] = fresh[replace[0] - resample[0] : replace[1] - resample[0]]
    return out


def source_rows(full_height: int, height: int, resample: tuple[int, int]) -> tuple[int, int]:
    """The source rows that the output rows ``resample`` (on the grid ``band`` aligns to) cover exactly."""
    rows = Fraction(full_height, height)
    return int(resample[0] * rows), int(resample[1] * rows)
