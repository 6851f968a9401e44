"""Each service leaves what it made to start out of the garbage collector's walks while it serves
(deskpilot/collector.py): a full collection then walks only what was made since, not the ~130,000 objects of
its imports and app (60-100 ms of a stalled event loop). When its lifespan ends they go back to the
collector."""

from __future__ import annotations

import gc
import weakref
from pathlib import Path

import pytest
from fastapi import FastAPI

from deskpilot.config import DesktopSettings, SecuritySettings, UISettings
from deskpilot.desktop.api import create_app as desktop_app
from deskpilot.tasks.app import create_app as task_app
from deskpilot.ui.server import create_app as ui_app
from testbed.net import ServerThread
from testbed.security import TOKEN, security
from testbed.task_service import settings_for
from tests.unit.test_collector import Cycle

UNREACHABLE = "http://127.0.0.1:9"


def app_of(service: str, request: pytest.FixtureRequest, tmp_path: Path) -> FastAPI:
    if service == "desktop":
        display = request.getfixturevalue("display")
        return desktop_app(
            DesktopSettings(display=display.name, files_dir=tmp_path, journal=False), None, security()
        )
    if service == "tasks":
        return task_app(settings_for(f"sqlite:///{tmp_path}/tasks.db"), security=security())
    return ui_app(UISettings(tasks_url=UNREACHABLE, desktop_url=UNREACHABLE), SecuritySettings(token=TOKEN))


@pytest.mark.parametrize("service", ["desktop", "tasks", "ui"])
def test_a_service_leaves_what_it_started_with_out_of_collections(
    service: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    app = app_of(service, request, tmp_path)
    before = Cycle()  # garbage once dropped, made before the service started
    gone = weakref.ref(before)
    with ServerThread(app):
        del before
        gc.collect()
        assert gone() is not None, "a collection walked what existed as the service started"
    gc.collect()
    assert gone() is None, "what was frozen did not go back to the collector when the service stopped"
