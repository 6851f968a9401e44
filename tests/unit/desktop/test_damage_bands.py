"""How a damage region's rectangles become the boxes a poll keeps, and rows become bands."""

from __future__ import annotations

from deskpilot.desktop.x11.damage import MAX_BANDS, bands, join_rows


def test_rectangles_in_rows_apart_stay_apart_and_near_ones_are_one_band() -> None:
    rects = [(0, 0, 1, 1), (700, 540, 1, 1), (1919, 1079, 1, 1), (10, 550, 5, 20)]
    assert bands(rects) == [(0, 0, 1, 1), (10, 540, 701, 570), (1919, 1079, 1920, 1080)]


def test_more_bands_than_kept_are_their_bounding_box() -> None:
    rects = [(5 * i, 100 * i, 10, 2) for i in range(MAX_BANDS + 1)]
    assert bands(rects) == [(0, 0, 5 * MAX_BANDS + 10, 100 * MAX_BANDS + 2)]
    assert bands([]) == []


def test_rows_closer_than_the_join_are_one_interval() -> None:
    assert join_rows([(0, 1), (20, 30), (540, 541), (1079, 1080)]) == [(0, 30), (540, 541), (1079, 1080)]
    spans = [(100 * i, 100 * i + 1) for i in range(MAX_BANDS + 1)]
    assert join_rows(spans) == [(0, 100 * MAX_BANDS + 1)]
