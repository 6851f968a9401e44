"""Dependencies of the UI's routes: the agent client and the settings of the running app (made in its
lifespan, looked up per request)."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends
from starlette.requests import HTTPConnection

from deskpilot.config import UISettings
from deskpilot.ui.agent import AgentClient
from deskpilot.ui.fleet import DesktopDirectory


def agent_client(conn: HTTPConnection) -> AgentClient:
    client: AgentClient = conn.app.state.agent
    return client


def ui_settings(conn: HTTPConnection) -> UISettings:
    settings: UISettings = conn.app.state.settings
    return settings


def desktop_directory(conn: HTTPConnection) -> DesktopDirectory:
    directory: DesktopDirectory = conn.app.state.directory
    return directory


Agent = Annotated[AgentClient, Depends(agent_client)]
Directory = Annotated[DesktopDirectory, Depends(desktop_directory)]
Settings = Annotated[UISettings, Depends(ui_settings)]
