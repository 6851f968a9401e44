"""Configuration of the three services, one pydantic-settings class each; every variable is in the README."""

from __future__ import annotations

from pydantic import AliasChoices, Field
from pydantic_settings import BaseSettings, SettingsConfigDict


class DesktopSettings(BaseSettings):
    """Desktop service (port 9990)."""

    model_config = SettingsConfigDict(env_prefix="DESKTOP_", extra="ignore")

    display: str = Field(default=":0", validation_alias=AliasChoices("DESKTOP_DISPLAY", "DISPLAY"))
    port: int = 9990
    user: str = "user"
    vnc_host: str = "127.0.0.1"  # x11vnc, bridged to the browser at /vnc/websockify
    vnc_port: int = 5900


class AgentSettings(BaseSettings):
    """Agent service (port 9991)."""

    model_config = SettingsConfigDict(env_prefix="AGENT_", extra="ignore")

    port: int = 9991
    desktop_url: str = "http://127.0.0.1:9990"


class UISettings(BaseSettings):
    """Web UI (port 9992)."""

    model_config = SettingsConfigDict(env_prefix="UI_", extra="ignore")

    host: str = "0.0.0.0"
    port: int = 9992
    agent_url: str = "http://127.0.0.1:9991"  # proxied at /api, WebSocket events at /api/ws
    desktop_url: str = "http://127.0.0.1:9990"  # its /vnc (noVNC + WebSocket bridge) is proxied as is
    page_size: int = 50  # tasks per page of the task list
