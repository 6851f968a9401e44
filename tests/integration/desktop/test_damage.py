"""Damage tracking on a bare Xvfb of its own: drawing is counted, quiet is measured, and a screenshot of a
screen nothing was drawn on is the one taken before, byte for byte what a fresh capture gives."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from Xlib import display as xdisplay

from deskpilot.computer.fields import ScreenshotOptions
from deskpilot.computer.geometry import SCREEN, clock
from deskpilot.desktop import capture
from deskpilot.desktop.capture import Capturer
from deskpilot.desktop.resample import redo_rows
from deskpilot.desktop.x11.server import Requirements
from testbed.xvfb import Display, start_xvfb

REQUIRED = Requirements(SCREEN.width, SCREEN.height, 24, None)


@pytest.fixture(scope="module")
def bare() -> Iterator[Display]:
    d = start_xvfb()
    try:
        yield d
    finally:
        d.stop()


@pytest.fixture
def capturer(bare: Display) -> Iterator[Capturer]:
    c = Capturer(bare.name, REQUIRED)
    try:
        yield c
    finally:
        c.close()


def draw(name: str, x: int, colour: int, y: int = 100, size: tuple[int, int] = (200, 200)) -> None:
    """A filled rectangle straight on the root window, from another client."""
    d = xdisplay.Display(name)
    root = d.screen().root
    gc = root.create_gc(foreground=colour)
    root.fill_rectangle(gc, x, y, *size)
    d.sync()
    d.close()


def fresh(capturer: Capturer, **kw: object) -> bytes:
    """What a capture gives with nothing cached (nor a scaled frame kept to resample a band of, nor rows of
    the shared frame taken as current: the whole screen is grabbed)."""
    capturer._frames.clear()
    capturer._scaled.clear()
    capturer._current = None
    return capturer.screenshot(ScreenshotOptions(**kw)).data


def wait_counted(capturer: Capturer, before: int) -> None:
    deadline = time.monotonic() + 5
    assert capturer.damage is not None
    while capturer.damage.poll() == before:
        assert time.monotonic() < deadline, "no damage event arrived"
        time.sleep(0.005)


def test_drawing_is_counted_and_quiet_is_measured(bare: Display, capturer: Capturer) -> None:
    watcher = capturer.damage
    assert watcher is not None and watcher.alive
    before = watcher.poll(sync=True)
    draw(bare.name, 10, 0xFF0000)
    wait_counted(capturer, before)
    assert watcher.quiet_seconds() < 0.5
    time.sleep(0.3)
    assert watcher.quiet_seconds() >= 0.3


def test_the_clocks_minute_is_in_the_frame_but_not_what_was_drawn(bare: Display, capturer: Capturer) -> None:
    """The panel clock draws on its own: a frame shows it, the evidence of an action leaves it out."""
    watcher = capturer.damage
    assert watcher is not None
    x, y, w, h = clock(SCREEN)
    frame = capturer.screenshot(ScreenshotOptions())
    mark = watcher.poll(sync=True)
    draw(bare.name, x + 4, 0xFF00FF, y + 4, (w - 8, h - 8))  # the minute turning over
    wait_counted(capturer, mark)
    assert watcher.damaged_since(mark) is None
    after = capturer.screenshot(ScreenshotOptions())
    assert after is not frame and after.data == fresh(capturer), "the frame is the screen, clock and all"
    draw(bare.name, x - 10, 0x00FFFF, y + 4, (20, 8))  # across its edge: drawn by something else
    wait_counted(capturer, watcher.changes)
    assert watcher.damaged_since(mark) == (x - 10, y + 4, x + 10, y + 12)


@pytest.mark.parametrize(("fmt", "width"), [("png", None), ("png", 1280), ("jpeg", 1366)])
def test_an_unchanged_screen_is_served_again_and_is_what_a_fresh_capture_gives(
    bare: Display, capturer: Capturer, fmt: str, width: int | None
) -> None:
    draw(bare.name, 300, 0x00FF00)
    first = capturer.screenshot(ScreenshotOptions(format=fmt, width=width))
    again = capturer.screenshot(ScreenshotOptions(format=fmt, width=width))
    assert again is first, "nothing was drawn: the frame is served again"
    assert fresh(capturer, format=fmt, width=width) == first.data, "byte for byte a fresh capture"


@pytest.mark.parametrize("width", [None, 1280])
def test_a_drawing_is_never_missed(bare: Display, capturer: Capturer, width: int | None) -> None:
    """Right after another client draws (no waiting for our thread), the next screenshot shows it."""
    for i in range(20):
        before = capturer.screenshot(ScreenshotOptions(width=width))
        draw(bare.name, 600 + 10 * i, 0x0000FF if i % 2 else 0xFFFF00)
        after = capturer.screenshot(ScreenshotOptions(width=width))
        assert after is not before and after.data != before.data, f"round {i}: a stale frame"
        assert after.data == fresh(capturer, width=width), f"round {i}"


def test_without_damage_tracking_every_screenshot_is_fresh(bare: Display, capturer: Capturer) -> None:
    assert capturer.damage is not None
    capturer.damage.close()
    first = capturer.screenshot()
    assert capturer.screenshot() is not first


def test_pointer_moves_alone_keep_the_cache_or_refresh_it_but_never_serve_a_stale_frame(
    bare: Display, capturer: Capturer
) -> None:
    d = xdisplay.Display(bare.name)
    try:
        capturer.screenshot()
        d.screen().root.warp_pointer(50, 50)
        d.sync()
        assert capturer.screenshot().data == fresh(capturer)
    finally:
        d.close()


@pytest.mark.parametrize("width", [1366, 1280, 1024])
def test_a_scaled_frame_after_a_small_change_is_what_resampling_the_whole_frame_gives(
    bare: Display, capturer: Capturer, width: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    redone: list[tuple[int, int]] = []

    def spy(previous, pieces):
        redone.extend(replace for _, (replace, _) in pieces)
        return redo_rows(previous, pieces)

    monkeypatch.setattr(capture, "redo_rows", spy)
    capturer.screenshot(ScreenshotOptions(width=width))  # kept: the next ones resample the rows that changed
    for i, x in enumerate((50, 900, 1700)):
        draw(bare.name, x, 0x203040 * (i + 1))
        partial = capturer.screenshot(ScreenshotOptions(width=width)).data
        assert partial == fresh(capturer, width=width), f"drawing {i}"
    assert len(redone) == 3 and all(hi - lo < 300 for lo, hi in redone), redone


def test_again_serves_only_an_unchanged_frame_and_never_waits(bare: Display, capturer: Capturer) -> None:
    """What the event loop asks before sending a screenshot to a worker thread."""
    first = capturer.screenshot(ScreenshotOptions(width=1280))
    assert capturer.again(ScreenshotOptions(width=1280)) is first
    assert capturer.again() is None, "never taken at this size"
    draw(bare.name, 700, 0x445566)
    assert capturer.again(ScreenshotOptions(width=1280)) is None, "drawn on since"
    second = capturer.screenshot(ScreenshotOptions(width=1280))
    with capturer._lock:  # a capture in progress
        assert capturer.again(ScreenshotOptions(width=1280)) is None
    assert capturer.again(ScreenshotOptions(width=1280)) is second


def test_only_the_rows_drawn_on_are_grabbed_and_the_frame_is_what_a_whole_grab_gives(
    bare: Display, capturer: Capturer, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert capturer._shared is not None, "MIT-SHM"
    grabbed: list[tuple[int, int] | None] = []
    grab = capturer._shared.grab

    def spy(root: object, rows: tuple[int, int] | None = None) -> object:
        grabbed.append(rows)
        return grab(root, rows)

    monkeypatch.setattr(capturer._shared, "grab", spy)
    capturer.screenshot()
    d = xdisplay.Display(bare.name)
    root = d.screen().root
    try:
        for i, (y, h) in enumerate(((0, 1), (500, 40), (1079, 1), (1000, 80))):
            root.fill_rectangle(root.create_gc(foreground=0x102030 * (i + 2)), 100 * i, y, 300, h)
            d.sync()
            partial = capturer.screenshot(ScreenshotOptions(width=1366 if i % 2 else None))
            assert grabbed[-1] == (y, y + h), f"drawing {i}: rows {grabbed[-1]}"
            assert partial.data == fresh(capturer, width=1366 if i % 2 else None), f"drawing {i}"
            assert grabbed[-1] is None, "a fresh capture grabs the whole screen"
        grabbed.clear()
        shot = capturer.screenshot(
            ScreenshotOptions(format="jpeg")
        )  # nothing drawn since: no grab at all, the frame is current
        assert grabbed == [] and shot.data == fresh(capturer, format="jpeg")
        capturer.screenshot(ScreenshotOptions(width=1366))  # kept: its bands are resampled next
        for y in (3, 600, 1070):  # three bands apart, each told apart (a poll between)
            root.fill_rectangle(root.create_gc(foreground=0x405060 + y), 500, y, 50, 5)
            d.sync()
            assert capturer.damage is not None
            capturer.damage.poll(sync=True)  # counts it, and sends the DamageSubtract that empties the region
            capturer.damage.poll(sync=True)  # which the server has done once this round trip is back: the
            # next drawing starts a box of its own (else the region's bounding box grows over both)
        grabbed.clear()
        pieces: list[int] = []

        def counted(kept, redo):
            pieces.append(len(redo))
            return redo_rows(kept, redo)

        monkeypatch.setattr(capture, "redo_rows", counted)
        banded = capturer.screenshot(ScreenshotOptions(width=1366)).data
        assert grabbed == [(3, 8), (600, 605), (1070, 1075)] and pieces == [3], (grabbed, pieces)
        assert banded == fresh(capturer, width=1366)
    finally:
        d.close()
