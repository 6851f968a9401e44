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
    """Agent service (port 9991), its LLM providers and the loop's budgets; every variable is in the README.

    Provider keys and per-provider model names use the providers' usual variable names (no ``AGENT_``
    prefix) so an existing shell environment just works.
    """

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

    # ---- which LLM: a LiteLLM proxy, or the first provider whose key is set
    model: str | None = None  # AGENT_MODEL: default model, "provider/model" or a bare model name
    llm_proxy_url: str | None = None  # AGENT_LLM_PROXY_URL
    llm_proxy_key: str | None = None  # AGENT_LLM_PROXY_KEY
    anthropic_api_key: str | None = Field(default=None, validation_alias="ANTHROPIC_API_KEY")
    openai_api_key: str | None = Field(default=None, validation_alias="OPENAI_API_KEY")
    gemini_api_key: str | None = Field(default=None, validation_alias="GEMINI_API_KEY")
    openrouter_api_key: str | None = Field(default=None, validation_alias="OPENROUTER_API_KEY")
    openai_base_url: str | None = None  # AGENT_OPENAI_BASE_URL: Ollama, vLLM, LM Studio ... (".../v1")
    openai_base_key: str | None = None  # AGENT_OPENAI_BASE_KEY, if that server wants one
    anthropic_model: str = Field(default="claude-sonnet-4-6", validation_alias="ANTHROPIC_MODEL")
    openai_model: str = Field(default="gpt-5.4", validation_alias="OPENAI_MODEL")
    gemini_model: str = Field(default="gemini-3.5-flash", validation_alias="GEMINI_MODEL")
    openrouter_model: str = Field(default="anthropic/claude-sonnet-4.6", validation_alias="OPENROUTER_MODEL")
    openai_base_model: str = "qwen2.5vl"  # AGENT_OPENAI_BASE_MODEL
    context_window: int | None = None  # AGENT_CONTEXT_WINDOW: override what LiteLLM/the proxy reports
    llm_timeout: float = 120.0  # seconds per LLM call
    llm_retries: int = 4  # extra attempts on transient errors (429, 5xx, connection, timeout)
    llm_backoff: float = 1.0  # first back-off in seconds, doubled per attempt (with jitter), max 30 s
    max_output_tokens: int = 4096  # per LLM call

    # ---- the loop's budgets and behaviour, per task run (a human's reply starts a new run)
    max_steps: int = 100  # LLM calls per task run
    max_tokens: int = 2_000_000  # prompt + completion tokens per task run
    max_wall_seconds: float = 3600.0  # wall time per task run
    repeat_limit: int = 5  # the same action this many times in a row -> NEEDS_HELP
    keep_screenshots: int = 3  # screenshots kept in the context; older ones become a text note
    summarize_at: float = 0.75  # fraction of the context window that triggers summarisation
    screenshot_width: int = 1280  # width of the screenshots the model sees (height keeps 16:9)
    settle_timeout_ms: int = 1000  # longest wait for the screen to settle after an action
    settle_interval_ms: int = 50  # pause between the frames compared for settling


class UISettings(BaseSettings):
    """Web UI (port 9992)."""

    model_config = SettingsConfigDict(env_prefix="UI_", extra="ignore")

    host: str = "0.0.0.0"
    port: int = 9992
    agent_url: str = "http://127.0.0.1:9991"  # proxied at /api, WebSocket events at /api/ws
    desktop_url: str = "http://127.0.0.1:9990"  # its /vnc (noVNC + WebSocket bridge) is proxied as is
    page_size: int = 50  # tasks per page of the task list
