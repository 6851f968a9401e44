"""Configuration of the three services, one pydantic-settings class each; every variable is in the README."""

from __future__ import annotations

from pathlib import Path

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
    # relative write_file/read_file paths resolve here; default: the desktop user's ~/Desktop
    files_dir: Path | None = None
    max_file_bytes: int = Field(default=100 << 20, gt=0)
    # seconds `application` waits for a launched program's window before answering 503
    app_timeout: float = Field(default=60.0, gt=0)


class AgentSettings(BaseSettings):
    """Agent service (port 9991)."""

    model_config = SettingsConfigDict(env_prefix="AGENT_", extra="ignore", populate_by_name=True)

    port: int = 9991
    desktop_url: str = "http://127.0.0.1:9990"
    # SQLAlchemy URL; plain `postgresql://` and `sqlite:///` are given their async drivers.
    database_url: str = Field(
        default="sqlite+aiosqlite:////var/lib/deskpilot/agent.db",
        validation_alias=AliasChoices("DATABASE_URL", "AGENT_DATABASE_URL", "database_url"),
    )
    # The worker claims and runs tasks; off gives a bare API (tests, or a read-only replica).
    worker_enabled: bool = True
    # "package.module:attribute" of an Executor (or a zero-argument factory of one); empty = built-in.
    executor: str = ""
    # A claimed task is owned for this long; the worker renews it every lease_seconds / 3.
    lease_seconds: float = 30.0
    # Longest sleep of an idle worker: only catches other processes' changes when LISTEN/NOTIFY is
    # unavailable; local changes wake the worker at once.
    poll_seconds: float = 5.0
    # Worker identity written into the lease; default "<hostname>:<pid>".
    worker_id: str = ""
    # Uploads: per file, per task (sum) and count.
    max_file_bytes: int = 100 * 1024 * 1024
    max_upload_bytes: int = 200 * 1024 * 1024
    max_files: int = 20
    # Where uploaded files land on the desktop.
    desktop_files_dir: str = "/home/user/Desktop"
    # Time-out of one desktop API call.
    desktop_timeout: float = 60.0


class UISettings(BaseSettings):
    """Web UI (port 9992)."""

    model_config = SettingsConfigDict(env_prefix="UI_", extra="ignore")

    host: str = "0.0.0.0"
    port: int = 9992
    agent_url: str = "http://127.0.0.1:9991"  # proxied at /api, WebSocket events at /api/ws
    desktop_url: str = "http://127.0.0.1:9990"  # its /vnc (noVNC + WebSocket bridge) is proxied as is
    page_size: int = 50  # tasks per page of the task list
