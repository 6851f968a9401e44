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

from concurrent.futures import ThreadPoolExecutor
from fractions import Fraction

import cv2
import numpy as np

WHOLE_SHARE = 0.6  # bands of more output rows than this share of the frame: resample the whole frame
Rows = tuple[int, int]  # first, last + 1
Band = tuple[Rows, Rows]  # the output rows to replace, and the output rows to resample for them
_HELPER = ThreadPoolExecutor(1, thread_name_prefix="resample")  # the second thread of ``downscale_whole``


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


def band(full: tuple[int, int], size: tuple[int, int], top: int, bottom: int) -> Band | None:
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


def bands(full: tuple[int, int], size: tuple[int, int], changed: list[Rows]) -> list[Band] | None:
    """``band`` for each interval of source rows ``changed`` (sorted, apart), two whose output rows meet
    taken as one; None when one needs the whole frame or all together are as much as it."""
    out: list[tuple[Rows, Band]] = []  # the source rows, and their band
    for top, bottom in changed:
        one = band(full, size, top, bottom)
        if one is not None and out and one[0][0] <= out[-1][1][0][1]:
            top = out.pop()[0][0]
            one = band(full, size, top, bottom)
        if one is None:
            return None
        out.append(((top, bottom), one))
    if sum(b[1][1] - b[1][0] for _, b in out) > size[1] * WHOLE_SHARE:
        return None
    return [b for _, b in out]


def redo_rows(kept: np.ndarray, pieces: list[tuple[np.ndarray, Band]]) -> np.ndarray:
    """``kept`` (a scaled frame, the caller's alone: changed in place) with, for each piece, the output rows
    to replace resampled from its source, the full frame's rows (``source_rows``) for the output rows to
    resample (as ``band`` gave them). Bands write rows of their own: the first is resampled by the helper
    thread while the caller does the others (OpenCV lets go of the GIL)."""
    helper = _HELPER.submit(_redo, kept, *pieces[0]) if len(pieces) > 1 else None
    for piece in pieces[1:] if helper else pieces:
        _redo(kept, *piece)
    if helper is not None:
        helper.result()
    return kept


def downscale_whole(frame: np.ndarray, size: tuple[int, int]) -> np.ndarray:
    """``downscale`` on two threads, the same bytes: the top and bottom halves of the output are bands cut on
    the grid ``band`` aligns to, one resampled by a helper thread while the caller does the other (OpenCV
    lets go of the GIL). 6.5 -> 3.9 ms at 1366 wide, 5.9 -> 3.1 ms at 1280, for 3-18 % more CPU (the bands'
    margins, the hand-over), where OpenCV's own two threads cost 28 % more on every call, so the service keeps
    those at one (``capture``)."""
    full, height = (frame.shape[1], frame.shape[0]), size[1]
    period = Fraction(full[1], height).denominator  # output rows per whole number of source rows
    if not by_rows(full, size) or height < 4 * period:
        return downscale(frame, size)
    cut = height // 2 // period * period
    top: Band = ((0, cut), (0, cut + period))
    bottom: Band = ((cut, height), (cut - period, height))
    out = np.empty((height, size[0], *frame.shape[2:]), frame.dtype)
    helper = _HELPER.submit(_redo, out, frame[slice(*source_rows(full[1], height, top[1]))], top)
    _redo(out, frame[slice(*source_rows(full[1], height, bottom[1]))], bottom)
    helper.result()
    return out


def _redo(out: np.ndarray, source: np.ndarray, piece: Band) -> None:
    (first, last), (lo, hi) = piece
    out[first:last] = downscale(source, (out.shape[1], hi - lo))[first - lo : last - lo]


def source_rows(full_height: int, height: int, resample: Rows) -> Rows:
    """The source rows that the output rows ``resample`` (on the grid ``band`` aligns to) cover exactly."""
    rows = Fraction(full_height, height)
    return int(resample[0] * rows), int(resample[1] * rows)
