"""Configuration of the three services, one pydantic-settings class each; every variable is in the README."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

from pydantic import AliasChoices, Field, field_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict


class DesktopSettings(BaseSettings):
    """Desktop service (port 9990)."""

    model_config = SettingsConfigDict(env_prefix="DESKTOP_", extra="ignore")

    display: str = Field(default=":0", validation_alias=AliasChoices("DESKTOP_DISPLAY", "DISPLAY"))
    vnc_host: str = "127.0.0.1"  # x11vnc, bridged to the browser at /vnc/websockify
    vnc_port: int = 5900
    port: int = 9990
    user: str = "user"
    # relative write_file/read_file paths resolve here; default: the desktop user's ~/Desktop
    files_dir: Path | None = None
    max_file_bytes: int = Field(default=100 << 20, gt=0)
    # seconds `application` waits for a launched program's window before answering 503
    app_timeout: float = Field(default=60.0, gt=0)
    # Host names /mcp accepts besides loopback (DNS-rebinding protection), comma-separated; "*" = any.
    # Behind a port mapping or an ingress, list the public name: DESKTOP_MCP_ALLOWED_HOSTS=desk.example.com
    mcp_allowed_hosts: Annotated[list[str], NoDecode] = []

    @field_validator("mcp_allowed_hosts", mode="before")
    @classmethod
    def _split_hosts(cls, value: object) -> object:
        return [h.strip() for h in value.split(",") if h.strip()] if isinstance(value, str) else value


class AgentSettings(BaseSettings):
    """Agent service (port 9991)."""

    model_config = SettingsConfigDict(env_prefix="AGENT_", extra="ignore")

    port: int = 9991
    desktop_url: str = "http://127.0.0.1:9990"


class UISettings(BaseSettings):
    """Web UI (port 9992)."""

    model_config = SettingsConfigDict(env_prefix="UI_", extra="ignore")

    port: int = 9992
    agent_url: str = "http://127.0.0.1:9991"
    desktop_url: str = "http://127.0.0.1:9990"
