"""Dependencies of the UI's routes: the task service's client and the settings of the running app (made in its
lifespan, looked up per request)."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends
from starlette.requests import HTTPConnection

from deskpilot.client.agent import AsyncAgent
from deskpilot.config import UISettings
from deskpilot.ui.fleet import DesktopDirectory


def task_client(conn: HTTPConnection) -> AsyncAgent:
    client: AsyncAgent = conn.app.state.tasks
    return client


def ui_settings(conn: HTTPConnection) -> UISettings:
    settings: UISettings = conn.app.state.settings
    return settings


def desktop_directory(conn: HTTPConnection) -> DesktopDirectory:
    directory: DesktopDirectory = conn.app.state.directory
    return directory


Tasks = Annotated[AsyncAgent, Depends(task_client)]
Directory = Annotated[DesktopDirectory, Depends(desktop_directory)]
Settings = Annotated[UISettings, Depends(ui_settings)]
