"""Fixtures of the web UI's browser tests: Debian's Chromium, and a desktop of their own.

The UI tests get their own Xvfb (not the session's) because the agent they drive opens windows on it;
other suites that count windows on the session display must not see them.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from playwright.sync_api import Browser, sync_playwright

from app.config import DesktopSettings
from app.desktop.api import create_app as desktop_app
from tests.support.browser import launch_chromium
from tests.support.net import ServerThread
from tests.support.vnc import start_x11vnc
from tests.support.xvfb import Display, managed_display


@pytest.fixture(scope="package")
def browser() -> Iterator[Browser]:
    with sync_playwright() as p:
        b = launch_chromium(p)
        yield b
        b.close()


@pytest.fixture(scope="package")
def ui_display() -> Iterator[Display]:
    with managed_display() as d:
        yield d


@pytest.fixture(scope="package")
def desktop_url(ui_display: Display) -> Iterator[str]:
    """The real desktop service on the UI tests' display, with x11vnc behind its /vnc."""
    proc, port = start_x11vnc(ui_display)
    with ServerThread(desktop_app(DesktopSettings(display=ui_display.name, vnc_port=port))) as server:
        yield server.url
    proc.terminate()
    proc.wait(10)
