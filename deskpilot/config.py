"""Configuration of the services, one pydantic-settings class each, and the table of LLM providers.

Every variable is documented in docs/operations.md.
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import AliasChoices, Field, SecretStr, field_validator
from pydantic_settings import (
    BaseSettings,
    EnvSettingsSource,
    NoDecode,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
)

from deskpilot.computer.fields import DESKTOP_DIR
from deskpilot.taskapi.types import DESKTOP_NAME_PATTERN


class DesktopSettings(BaseSettings):
    """Desktop service (port 9990)."""

    model_config = SettingsConfigDict(env_prefix="DESKTOP_", extra="ignore")

    display: str = Field(default=":0", validation_alias=AliasChoices("DESKTOP_DISPLAY", "DISPLAY"))
    # the user the display's X server must run as (the owner of /tmp/.X11-unix/X<n>); unset: not checked.
    # Another server on that display is refused, as is any screen but 1920x1080 at depth 24.
    display_owner: str | None = None
    vnc_host: str = "127.0.0.1"  # x11vnc, bridged to the browser at /vnc/websockify
    vnc_port: int = 5900
    # x11vnc's Unix socket instead of host:port (the appliance's: its directory is the display owner's alone)
    vnc_socket: Path | None = None
    # the desktop user's worker (desktop/handsd.py), which does files, programs and commands as that user;
    # unset: this process does them (as the desktop user, or as root with the user's rights)
    hands_socket: Path | None = None
    # the user that worker runs as, whose socket alone is trusted: the desktop user (unset), or root when the
    # desktop user cannot read the code (scripts/appliance.sh then runs it as root, and says so)
    hands_user: str | None = None
    # DESKTOP_ACCESSIBILITY: the toolkits' accessibility bridges in the session's programs, which the
    # accessibility action reads. Off by default: with GTK's bridge on, a Thunar navigation's frame was not
    # the rested one in 3 of 4 end-to-end runs (docs/desktop-api.md, "accessibility")
    accessibility: bool = False
    port: int = 9990
    user: str = "user"
    # the desktop user's home: HOME of the programs `application` starts, and where "~/" paths resolve;
    # default: the home of the user's passwd entry
    home: Path | None = None
    # relative write_file/read_file paths resolve here; default: the desktop user's ~/Desktop
    files_dir: Path | None = None
    max_file_bytes: int = Field(default=100 << 20, gt=0)
    # request bodies read and handled at once, at most this many bytes (bodies of 1 MiB and less are not
    # counted): a large one beyond waits its turn, at most body_wait seconds, then 503 (desktop/body.py)
    body_budget_bytes: int = Field(default=256 << 20, gt=0)
    body_wait: float = Field(default=60.0, gt=0)
    # what POST /reset brings the home back to; default: rootfs/home/user of the appliance's checkout
    skeleton: Path | None = None
    # seconds `application` waits for a launched program's window before answering 504
    app_timeout: float = Field(default=60.0, gt=0)
    # the journal of every action that reaches the desktop (GET /journal, docs/desktop-api.md): on or off,
    # how many entries it keeps and about how many bytes they hold, how many frames and how many bytes of
    # them, and how long input and the screen must be quiet after a burst of input before its frame is taken
    journal: bool = True
    journal_entries: int = Field(default=10_000, gt=0)
    journal_entry_bytes: int = Field(default=32 << 20, gt=0)
    journal_frames: int = Field(default=300, ge=0)
    journal_frame_bytes: int = Field(default=128 << 20, ge=0)
    journal_settle_ms: int = Field(default=300, ge=0, le=10_000)


@dataclass(frozen=True)
class Provider:
    """An LLM provider the agent can use without a proxy, enabled by setting ``key_var``."""

    name: str  # our name, the prefix of our model names ("anthropic/claude-sonnet-4-6")
    title: str
    key_var: str  # the variable that enables it
    model_var: str  # the variable naming its model
    default_model: str
    litellm_prefix: str  # LiteLLM's provider prefix


# Every provider, in the order that picks the default when several keys are set. The settings fields
# below, the agent's routing, GET /tasks/models, the UI's hint and the docs all come from this table.
PROVIDERS: tuple[Provider, ...] = (
    Provider(
        "anthropic", "Anthropic", "ANTHROPIC_API_KEY", "ANTHROPIC_MODEL", "claude-sonnet-4-6", "anthropic"
    ),
    Provider("openai", "OpenAI", "OPENAI_API_KEY", "OPENAI_MODEL", "gpt-5.4", "openai"),
    Provider("gemini", "Google Gemini", "GEMINI_API_KEY", "GEMINI_MODEL", "gemini-3.5-flash", "gemini"),
    Provider(
        "openrouter",
        "OpenRouter",
        "OPENROUTER_API_KEY",
        "OPENROUTER_MODEL",
        "anthropic/claude-sonnet-4.6",
        "openrouter",
    ),
    # any OpenAI-compatible server (Ollama, vLLM, LM Studio ...): LiteLLM's generic "openai/" route
    Provider(
        "local",
        "OpenAI-compatible server",
        "AGENT_OPENAI_BASE_URL",
        "AGENT_OPENAI_BASE_MODEL",
        "qwen2.5vl",
        "openai",
    ),
)
PROXY_VAR = "AGENT_LLM_PROXY_URL"
MODEL_VARIABLES = (*(p.key_var for p in PROVIDERS), PROXY_VAR)


def no_model_message() -> str:
    """Why a task cannot run when nothing is configured, and what to set."""
    keys = ", ".join(p.key_var for p in PROVIDERS[:-1])
    return (
        f"No LLM provider is configured. Set one of {keys}, or {PROVIDERS[-1].key_var} (an OpenAI-compatible "
        f"server such as Ollama or vLLM), or {PROXY_VAR} (a LiteLLM proxy), in the agent service's "
        "environment."
    )


def _provider(name: str) -> Provider:
    return next(p for p in PROVIDERS if p.name == name)


def _key(name: str) -> Any:
    return Field(default=None, validation_alias=_provider(name).key_var)


def _model(name: str) -> Any:
    p = _provider(name)
    return Field(default=p.default_model, validation_alias=p.model_var)


def _names(value: object) -> object:
    """A comma-separated variable as a list (blank entries dropped)."""
    return [v.strip() for v in value.split(",") if v.strip()] if isinstance(value, str) else value


# The task service's own variables were AGENT_* in 0.1 (the agent loop's keep that prefix). Each old name is
# still read in 0.2, below its new one, and the service logs the old names it read (``renamed_variables``).
TASKS_PREFIX, OLD_TASKS_PREFIX = "TASKS_", "AGENT_"


class TaskSettings(BaseSettings):
    """The task service (port 9991): API, queue, worker, uploads; every variable is in docs/operations.md."""

    model_config = SettingsConfigDict(env_prefix=TASKS_PREFIX, extra="ignore", populate_by_name=True)

    port: int = 9991
    desktop_url: str = "http://127.0.0.1:9990"
    # what it shows the desktop service (TASKS_DESKTOP_TOKEN; the appliance's desktop credential, which opens
    # the desktop and nothing else); default: the token
    desktop_token: SecretStr | None = None
    # SQLAlchemy URL; plain `postgresql://` and `sqlite:///` are given their async drivers.
    database_url: str = Field(
        default="sqlite+aiosqlite:////var/lib/deskpilot/agent.db",
        validation_alias=AliasChoices(
            "DATABASE_URL", "TASKS_DATABASE_URL", "AGENT_DATABASE_URL", "database_url"
        ),
    )
    # The worker claims and runs tasks; off gives a bare API (tests, or a read-only replica).
    worker_enabled: bool = True
    # "package.module:attribute" of the Executor that runs tasks (or a zero-argument factory of one).
    executor: str = "deskpilot.agent.executor:AgentExecutor"
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
    desktop_files_dir: str = DESKTOP_DIR
    # Time-out of one desktop API call.
    desktop_timeout: float = 60.0
    # This desktop in the fleet: its name (default: the host name), the labels tasks may ask for, and the URL
    # the rest of the fleet (the UI's live view) reaches its desktop service at (default: desktop_url).
    desktop_name: str = Field(default="", pattern=rf"{DESKTOP_NAME_PATTERN}|^$")
    desktop_labels: Annotated[list[str], NoDecode] = []
    desktop_fleet_url: str = ""
    # Trajectories (GET /tasks/{id}/trajectory): the ffmpeg that makes its MP4 on request (?video=true), the
    # video's frames per second (one frame per step), and the longest an encode may take.
    trajectory_ffmpeg: str = "ffmpeg"
    trajectory_video_fps: float = Field(default=2.0, gt=0, le=60)
    trajectory_video_timeout: float = Field(default=120.0, gt=0)
    # The archive's cap (frames and step lines; beyond it the trajectory says it is truncated), and how long a
    # finished task's trajectory is kept: days after its last change; 0 keeps it as long as the task.
    trajectory_max_bytes: int = Field(default=256 * 1024 * 1024, ge=1)
    trajectory_retention_days: float = Field(default=0.0, ge=0)

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        old_names = EnvSettingsSource(settings_cls, env_prefix=OLD_TASKS_PREFIX)
        return init_settings, env_settings, old_names, dotenv_settings, file_secret_settings

    @field_validator("desktop_labels", mode="before")
    @classmethod
    def _labels(cls, value: object) -> object:
        return _names(value)

    @field_validator("desktop_labels")
    @classmethod
    def _label_names(cls, labels: list[str]) -> list[str]:
        for label in labels:
            if not re.fullmatch(DESKTOP_NAME_PATTERN, label):
                raise ValueError(f"{label!r} is not a label: letters, digits, '.', '_' and '-', at most 63")
        return labels


class AgentSettings(BaseSettings):
    """The agent loop: its LLM providers and budgets; every variable is in docs/operations.md.

    Provider keys and per-provider model names use the providers' usual variable names (no ``AGENT_``
    prefix, see ``PROVIDERS``) so an existing shell environment just works.
    """

    model_config = SettingsConfigDict(env_prefix="AGENT_", extra="ignore", populate_by_name=True)

    # ---- which LLM: a LiteLLM proxy, or the first provider whose key is set
    model: str | None = None  # AGENT_MODEL: default model, "provider/model" or a bare model name
    llm_proxy_url: str | None = None  # AGENT_LLM_PROXY_URL
    llm_proxy_key: str | None = None  # AGENT_LLM_PROXY_KEY
    anthropic_api_key: str | None = _key("anthropic")
    openai_api_key: str | None = _key("openai")
    gemini_api_key: str | None = _key("gemini")
    openrouter_api_key: str | None = _key("openrouter")
    openai_base_url: str | None = _key("local")  # AGENT_OPENAI_BASE_URL: Ollama, vLLM ... (".../v1")
    openai_base_key: str | None = None  # AGENT_OPENAI_BASE_KEY, if that server wants one
    anthropic_model: str = _model("anthropic")
    openai_model: str = _model("openai")
    gemini_model: str = _model("gemini")
    openrouter_model: str = _model("openrouter")
    openai_base_model: str = _model("local")
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
    settle_timeout_ms: int = 3000  # longest wait for the screen to settle after an action
    settle_interval_ms: int = 50  # pause between the frames compared for settling (a desktop without damage)
    # the screen has settled once nothing was drawn for this long, and an action's first drawing is waited for
    # this long; None: the desktop's defaults for each action (docs/desktop-api.md), measured for truth
    settle_quiet_ms: int | None = None
    settle_expect_ms: int | None = None

    def provider_key(self, provider: Provider) -> str | None:
        return getattr(self, _FIELDS[provider.name][0])  # type: ignore[no-any-return]

    def provider_model(self, provider: Provider) -> str:
        return getattr(self, _FIELDS[provider.name][1])  # type: ignore[no-any-return]

    def configured_providers(self) -> list[Provider]:
        return [p for p in PROVIDERS if self.provider_key(p)]


# PROVIDERS name -> (key field, model field) of AgentSettings; a unit test checks it covers the table.
_FIELDS: dict[str, tuple[str, str]] = {
    "anthropic": ("anthropic_api_key", "anthropic_model"),
    "openai": ("openai_api_key", "openai_model"),
    "gemini": ("gemini_api_key", "gemini_model"),
    "openrouter": ("openrouter_api_key", "openrouter_model"),
    "local": ("openai_base_url", "openai_base_model"),
}


class UISettings(BaseSettings):
    """Web UI (port 9992)."""

    model_config = SettingsConfigDict(env_prefix="UI_", extra="ignore", populate_by_name=True)

    host: str = "127.0.0.1"  # `python -m deskpilot.ui` only; the appliance passes its own (DESKPILOT_HOST)
    port: int = 9992
    # the task service: proxied at /api, WebSocket events at /api/ws (UI_AGENT_URL in 0.1, still read in 0.2)
    tasks_url: str = Field(
        default="http://127.0.0.1:9991",
        validation_alias=AliasChoices("UI_TASKS_URL", "UI_AGENT_URL"),
    )
    desktop_url: str = "http://127.0.0.1:9990"  # its /vnc (noVNC + WebSocket bridge) is proxied as is
    desktop_token: SecretStr | None = None  # what it shows the desktop service (as TASKS_DESKTOP_TOKEN)
    page_size: int = 50  # tasks per page of the task list
    # hours a session lasts after logging in (then the login page again); logging out ends it at once
    session_ttl: float = Field(default=12.0, gt=0, le=24 * 366)
    # wrong tokens (login page, or a bearer shown to the UI) one client address may try before waiting:
    # 1 s after the next, then 2, 4 ... up to login_max_delay seconds; a right one clears its count
    login_free_attempts: int = Field(default=5, ge=0, le=1000)
    login_max_delay: float = Field(default=300.0, ge=1, le=3600)


class SecuritySettings(BaseSettings):
    """Who may reach the services: one set for all three (docs/security.md)."""

    model_config = SettingsConfigDict(env_prefix="DESKPILOT_", extra="ignore", populate_by_name=True)

    # The one secret. Unset on loopback only (make run); the appliance generates one when it listens
    # on another address.
    token: SecretStr | None = None
    # Services that must not see the token (the desktop service) get digests: the token's, and those of other
    # credentials that open them (the appliance's desktop credential), comma-separated.
    token_sha256: str | None = None
    # "off": no token required even if one is set (an explicit, logged opt-out).
    auth: Literal["on", "off"] = "on"
    # Host names besides loopback the services answer to (DNS-rebinding protection); "*" = any.
    allowed_hosts: Annotated[list[str], NoDecode] = Field(
        default=[], validation_alias=AliasChoices("DESKPILOT_ALLOWED_HOSTS", "DESKTOP_MCP_ALLOWED_HOSTS")
    )
    # Browser origins besides the service's own that may send requests that change something, and read
    # the APIs cross-origin (CORS), e.g. https://my-dashboard.example.
    allowed_origins: Annotated[list[str], NoDecode] = []

    _split = field_validator("allowed_hosts", "allowed_origins", mode="before")(_names)

    def token_value(self) -> str | None:
        return self.token.get_secret_value() if self.token and self.auth == "on" else None


class MetricsSettings(BaseSettings):
    """Prometheus metrics, one switch for the three services (docs/operations.md#metrics)."""

    model_config = SettingsConfigDict(env_prefix="DESKPILOT_", extra="ignore")

    # "off": no GET /metrics (404) and nothing recorded (the overhead bench compares the two)
    metrics: Literal["on", "off"] = "on"


# Renamed variables: the old name -> the new one, for the variables that are not a prefix's (those are derived
# from TaskSettings' fields).
RENAMED = {"UI_AGENT_URL": "UI_TASKS_URL", "DESKPILOT_AGENT_USER": "DESKPILOT_TASKS_USER"}


def log_renamed_variables(log: logging.Logger, environ: Mapping[str, str] = os.environ) -> None:
    """Say, once at start, which old names this service read, so they get renamed before 0.3."""
    for old, new in renamed_variables(environ):
        log.warning("%s is an old name: read as %s, which replaces it (the old name goes in 0.3)", old, new)


def renamed_variables(environ: Mapping[str, str] = os.environ) -> list[tuple[str, str]]:
    """The old names set in ``environ`` whose new name is not: (old, new), for the services to log."""
    pairs = dict(RENAMED)
    for name, field in TaskSettings.model_fields.items():
        if field.validation_alias is None:
            pairs[f"{OLD_TASKS_PREFIX}{name.upper()}"] = f"{TASKS_PREFIX}{name.upper()}"
    pairs["AGENT_DATABASE_URL"] = "TASKS_DATABASE_URL"
    return sorted((old, new) for old, new in pairs.items() if old in environ and new not in environ)
