"""The desktop's own noVNC page in Chromium, on loopback without a token (as `make run` serves it): /vnc is
view only, and /vnc?interactive=1 gives control of the real pointer."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator

import pytest
from playwright.sync_api import Browser, Page

from testbed.browser import PageErrors
from testbed.xvfb import Display


@pytest.fixture
def page(browser: Browser) -> Iterator[Page]:
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    p = context.new_page()
    errors = PageErrors(p)
    yield p
    context.close()
    errors.check()


def sweep(page: Page, display: Display) -> tuple[int, int]:
    """Park the real pointer, move the mouse across noVNC's canvas, and say where the pointer is."""
    page.wait_for_function("() => document.querySelector('#noVNC_container canvas')?.width === 1920")
    page.wait_for_timeout(300)  # noVNC's connected handlers settle
    subprocess.run(["xdotool", "mousemove", "5", "5"], env=display.env, check=True)
    box = page.locator("#noVNC_container canvas").bounding_box()
    assert box is not None
    page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    page.mouse.move(box["x"] + box["width"] / 4, box["y"] + box["height"] / 4, steps=5)
    # The events reach X through noVNC, the bridge and x11vnc: wait until the pointer has stopped moving
    # (three equal readings in a row), so a reading mid-sweep is never taken for the end of it.
    readings = [display.pointer()]
    for _ in range(40):
        page.wait_for_timeout(100)
        readings.append(display.pointer())
        if readings[-3:] == [readings[-1]] * 3 and (readings[-1] != (5, 5) or len(readings) > 15):
            break
    return readings[-1]


def test_the_desktops_own_page_is_view_only_unless_opened_interactive(
    page: Page, desktop_url: str, ui_display: Display
) -> None:
    page.goto(f"{desktop_url}/vnc")
    assert sweep(page, ui_display) == (5, 5), "the view-only page moved the real pointer"

    page.goto(f"{desktop_url}/vnc?interactive=1")
    x, y = sweep(page, ui_display)
    assert abs(x - 1920 // 4) <= 8 and abs(y - 1080 // 4) <= 8, (x, y)
