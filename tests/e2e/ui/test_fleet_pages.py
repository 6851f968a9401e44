"""The fleet's pages in Chromium against the real task service (SQLite, no worker) whose registry holds one
desktop, announced at the real desktop service of the UI tests (x11vnc on their own Xvfb): the Desktops page
lists it, its page shows its live view through /desktops/<name>/vnc, and taking it over (and handing it back)
reaches the task service and gives the view control of the real pointer."""

from __future__ import annotations

import asyncio
import subprocess
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest
from playwright.sync_api import Page, expect

from deskpilot.config import TaskSettings, UISettings
from deskpilot.tasks.app import create_app as agent_app
from deskpilot.tasks.desktops import Identity, Registry
from deskpilot.tasks.store import Store
from deskpilot.ui.server import create_app as ui_app
from testbed.net import ServerThread, free_port
from testbed.xvfb import Display

NAME = "ui-desk-0"


@pytest.fixture
def fleet_ui(tmp_path: Path, desktop_url: str) -> Iterator[tuple[str, httpx.Client]]:
    db = f"sqlite:///{tmp_path}/agent.db"
    settings = TaskSettings(
        database_url=db,
        worker_enabled=False,
        desktop_url=f"http://127.0.0.1:{free_port()}",
        poll_seconds=30.0,
    )
    with (
        ServerThread(agent_app(settings)) as agent,
        ServerThread(
            ui_app(UISettings(tasks_url=agent.url, desktop_url=f"http://127.0.0.1:{free_port()}"))
        ) as ui,
        httpx.Client(base_url=agent.url, timeout=10) as client,
    ):

        async def announce() -> None:
            store = await Store.open(db)
            try:
                await Registry(store).announce(Identity(NAME, ("gpu",), desktop_url), "w-ui", 600)
            finally:
                await store.close()

        with ThreadPoolExecutor(1) as pool:  # Playwright's sync API holds this thread's event loop
            pool.submit(asyncio.run, announce()).result()
        yield ui.url, client


def test_the_desktops_page_watches_and_takes_over_a_fleet_desktop(
    fleet_ui: tuple[str, httpx.Client], page: Page, ui_display: Display
) -> None:
    ui, agent = fleet_ui
    page.goto(f"{ui}/desktops")
    row = page.locator(f'tr[data-desktop="{NAME}"]')
    expect(row).to_have_attribute("data-state", "idle")
    expect(row).to_contain_text("gpu")
    row.get_by_role("link", name="Watch").click()
    expect(page).to_have_url(f"{ui}/desktops/{NAME}")
    # the live view, through this desktop's own proxy path (the UI's /vnc goes nowhere here)
    expect(page.locator("#desktop-state")).to_have_text("live · view only", timeout=15_000)
    page.get_by_role("button", name="Take over").click()
    expect(page.locator("#fleet-state")).to_have_text("Taken Over")
    expect(page.locator("#desktop-state")).to_have_text("live · you have control", timeout=15_000)
    assert agent.get("/desktops").json()[0]["takenOver"] is True
    # with control, the browser's pointer reaches the real display through the proxied bridge
    subprocess.run(["xdotool", "mousemove", "5", "5"], env=ui_display.env, check=True)
    page.wait_for_function("() => document.querySelector('#screen canvas')?.width === 1920")
    box = page.locator("#screen canvas").bounding_box()
    assert box is not None
    page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2, steps=5)
    for _ in range(50):
        if ui_display.pointer() != (5, 5):
            break
        page.wait_for_timeout(100)
    assert ui_display.pointer() != (5, 5), "the pointer did not move through the per-desktop live view"
    page.get_by_role("button", name="Hand back").click()
    expect(page.locator("#fleet-state")).to_have_text("Idle")
    expect(page.locator("#desktop-state")).to_have_text("live · view only", timeout=15_000)
    assert agent.get("/desktops").json()[0]["takenOver"] is False


# The widest the page ever was beyond its window, sampled every frame from the first paint.
OVERFLOW = """
window.overflow = 0;
const sample = () => {
  const page = document.documentElement;
  if (page) window.overflow = Math.max(window.overflow, page.scrollWidth - page.clientWidth);
  requestAnimationFrame(sample);
};
requestAnimationFrame(sample);
"""


def test_a_desktops_page_follows_the_events_and_fits_its_window_at_once(
    fleet_ui: tuple[str, httpx.Client], page: Page
) -> None:
    ui, agent = fleet_ui
    page.add_init_script(OVERFLOW)
    page.goto(f"{ui}/desktops/{NAME}")
    # connected to the task service's events, not "connecting…" for good
    expect(page.locator("#live")).to_have_attribute("data-state", "up")
    expect(page.locator("#live .live-text")).to_have_text("live")
    expect(page.locator("#desktop-state")).to_have_text("live · view only", timeout=15_000)
    page.wait_for_timeout(500)  # a few frames of the live view, scaled to fit
    assert page.evaluate("window.overflow") <= 0, "the page was wider than its window"
    # a change made elsewhere (another user, the API) shows without a reload
    assert agent.post(f"/desktops/{NAME}/takeover").status_code == 200
    expect(page.locator("#fleet-state")).to_have_text("Taken Over", timeout=10_000)
    assert agent.post(f"/desktops/{NAME}/resume").status_code == 200
    expect(page.locator("#fleet-state")).to_have_text("Idle", timeout=10_000)
