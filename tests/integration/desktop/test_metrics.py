"""``GET /metrics`` of the desktop service over real HTTP, after real actions on the session's Xvfb: behind
the token, clean for promtool, every family of docs/operations.md#metrics there, label values bounded, and
nothing at all with ``DESKPILOT_METRICS=off``."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from deskpilot.computer.actions import ACTION_NAMES
from deskpilot.config import DesktopSettings, MetricsSettings
from deskpilot.desktop.api import create_app
from deskpilot.desktop.controller import DesktopController
from deskpilot.desktop.outcome import Outcome
from testbed.metrics import families, label_values, scrape, value
from testbed.net import ServerThread
from testbed.security import BEARER, security, with_digest
from testbed.xvfb import Display, start_xvfb
from tests.integration.desktop.conftest import Desktop, serve

CLICK = {"action": "click_mouse", "coordinates": {"x": 1900, "y": 1060}, "button": "left", "clickCount": 1}
FAMILIES = {
    "deskpilot_action_duration_seconds": "histogram",
    "deskpilot_screenshot_bytes": "histogram",
    "deskpilot_settle_seconds": "histogram",
    "deskpilot_display_up": "gauge",
    "deskpilot_capture_path": "gauge",
    "process_cpu_seconds": "counter",
    "process_resident_memory_bytes": "gauge",
    "python_info": "gauge",
}


@pytest.fixture(scope="module")
def guarded(display: Display, files_dir: Path) -> Iterator[Desktop]:
    """A desktop service of these tests' own (its counts start at zero), given the token's digest."""
    with serve(display, with_digest(), files_dir=files_dir, journal=False) as desktop:
        yield desktop


def metrics(desktop: Desktop) -> str:
    with httpx.Client(base_url=desktop.url, headers=BEARER, timeout=30) as client:
        return scrape(client)


def count(text: str, action: str) -> float:
    return value(text, "deskpilot_action_duration_seconds_count", action=action) or 0.0


def test_metrics_want_the_token(guarded: Desktop) -> None:
    for headers in ({}, {"Authorization": "Bearer wrong"}):
        r = guarded.http.get(f"{guarded.url}/metrics", headers=headers)
        assert r.status_code == 401 and r.headers["www-authenticate"].startswith("Bearer"), r.text
        assert "deskpilot_" not in r.text
    assert guarded.http.get(f"{guarded.url}/metrics", headers=BEARER).status_code == 200


def test_actions_screenshots_and_settles_are_measured(guarded: Desktop) -> None:
    before = metrics(guarded)
    guarded.http.post(f"{guarded.url}/computer-use", json=CLICK, headers=BEARER).raise_for_status()
    settled = {**CLICK, "settle": {"maxMs": 2000}}
    assert guarded.http.post(f"{guarded.url}/computer-use", json=settled, headers=BEARER).json()["settled"]
    for shot in ({"action": "screenshot"}, {"action": "screenshot", "format": "jpeg", "quality": 60}):
        guarded.http.post(f"{guarded.url}/computer-use", json=shot, headers=BEARER).raise_for_status()

    text = metrics(guarded)
    assert FAMILIES.items() <= families(text).items()
    assert count(text, "click_mouse") == count(before, "click_mouse") + 2
    assert count(text, "screenshot") == count(before, "screenshot") + 2
    assert label_values(text, "deskpilot_action_duration_seconds_count", "action") == {*ACTION_NAMES, "other"}
    for kind in ("png", "jpeg"):
        assert value(text, "deskpilot_screenshot_bytes_count", format=kind) == 1
        assert (value(text, "deskpilot_screenshot_bytes_sum", format=kind) or 0) > 10_000  # a 1920x1080 frame
    assert value(text, "deskpilot_settle_seconds_count", settled="true") == 1
    assert value(text, "deskpilot_display_up") == 1
    assert value(text, "deskpilot_capture_path", path="shm") == 1
    assert value(text, "deskpilot_capture_path", path="getimage") == 0


def test_an_unknown_action_is_no_new_label(guarded: Desktop) -> None:
    """Refused names never reach the families; a name that reached them otherwise would count as other."""
    for name in ("definitely_not_an_action", "typ_keys", "x" * 200):
        r = guarded.http.post(f"{guarded.url}/computer-use", json={"action": name}, headers=BEARER)
        assert r.status_code == 400, r.text
    other = count(metrics(guarded), "other")
    assert guarded.controller.metrics is not None
    guarded.controller.metrics.action("made_up_by_a_caller", 0.001, Outcome())
    text = metrics(guarded)
    assert label_values(text, "deskpilot_action_duration_seconds_count", "action") == {*ACTION_NAMES, "other"}
    assert count(text, "other") == other + 1
    assert "made_up" not in text and "definitely_not" not in text


def test_a_lost_display_is_down_and_the_scrape_still_answers(files_dir: Path) -> None:
    lost = start_xvfb()
    with serve(lost, with_digest(), files_dir=files_dir, journal=False) as desktop:
        assert value(metrics(desktop), "deskpilot_display_up") == 1
        lost.stop()
        text = metrics(desktop)
        assert value(text, "deskpilot_display_up") == 0
        assert label_values(text, "deskpilot_capture_path", "path") == {"shm", "getimage"}


def test_metrics_off_serve_and_record_nothing(display: Display, files_dir: Path) -> None:
    config = DesktopSettings(display=display.name, files_dir=files_dir, journal=False)
    controller = DesktopController(config)
    app = create_app(config, controller, security(), MetricsSettings(metrics="off"))
    with ServerThread(app) as server, httpx.Client(base_url=server.url, timeout=30) as client:
        assert client.get("/metrics").status_code == 404
        assert client.post("/computer-use", json={"action": "cursor_position"}).status_code == 200
        assert controller.metrics is None
