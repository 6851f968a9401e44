"""Fixtures of the web UI's browser tests: Debian's Chromium, and a desktop of their own.

The UI tests get their own Xvfb (not the session's) because the agent they drive opens windows on it;
other suites that count windows on the session display must not see them.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, sync_playwright

from deskpilot.config import DesktopSettings
from deskpilot.desktop.api import create_app as desktop_app
from testbed.browser import PageErrors, launch_chromium
from testbed.desktop_files import private_files_dir
from testbed.net import ServerThread
from testbed.vnc import x11vnc
from testbed.xvfb import Display, managed_display


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
def desktop_files() -> Iterator[Path]:
    """The desktop's files directory for these tests, instead of the real ~/Desktop."""
    with private_files_dir() as path:
        yield path


@pytest.fixture(scope="package")
def vnc_port(ui_display: Display) -> Iterator[int]:
    """x11vnc on the UI tests' display."""
    with x11vnc(ui_display) as port:
        yield port


@pytest.fixture(scope="package")
def desktop_settings(ui_display: Display, vnc_port: int, desktop_files: Path) -> DesktopSettings:
    return DesktopSettings(display=ui_display.name, vnc_port=vnc_port, files_dir=desktop_files)


@pytest.fixture(scope="package")
def desktop_url(desktop_settings: DesktopSettings) -> Iterator[str]:
    """The real desktop service on the UI tests' display, with x11vnc behind its /vnc."""
    with ServerThread(desktop_app(desktop_settings)) as server:
        yield server.url


@pytest.fixture
def page(browser: Browser) -> Iterator[Page]:
    """A fresh Chromium page; the test fails on any uncaught JavaScript error it saw."""
    context = browser.new_context(viewport={"width": 1500, "height": 950})
    p = context.new_page()
    errors = PageErrors(p)
    yield p
    context.close()
    errors.check()
