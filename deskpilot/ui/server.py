"""The web UI server (port 9992): server-rendered pages, HTML fragments for live updates, one-origin proxy.

Pages (``deskpilot.ui.pages``) are rendered here with Jinja2 from the task API, so the first paint needs no
JavaScript. A little plain JavaScript then listens on the agent's WebSocket (through `/api/ws`) and asks this
server for fresh fragments (``deskpilot.ui.fragments``), so every piece of HTML has one template. `/api/*` and
`/vnc*` are proxied (HTTP and WebSocket, ``deskpilot.ui.proxy``) so a browser only ever talks to this port.
Every request passes the UI's guard first (``deskpilot.ui.guard``: Host, Origin, the session that the login
page sets, ``deskpilot.ui.login``, ``deskpilot.ui.sessions``), and no response may be framed by another site.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import httpx
from fastapi import FastAPI
from fastapi.staticfiles import StaticFiles

from deskpilot import __version__, collector, config, logs, metrics, tracing
from deskpilot.client.agent import AsyncAgent
from deskpilot.config import MetricsSettings, SecuritySettings, UISettings
from deskpilot.security import deny_framing
from deskpilot.ui import fragments, login, pages, proxy
from deskpilot.ui.fleet import DesktopDirectory
from deskpilot.ui.guard import UIGuard, ui_access
from deskpilot.ui.metrics import RequestCounter
from deskpilot.ui.throttle import Throttle

log = logging.getLogger(__name__)


@asynccontextmanager
async def services(app: FastAPI, settings: UISettings, token: str | None) -> AsyncIterator[None]:
    """The clients of the task service and the desktop, which speak for the browser with the token (if
    any)."""
    desktop_token = settings.desktop_token.get_secret_value() if settings.desktop_token else None
    # Page rendering: short time-outs so "task service down" shows quickly. Proxy: no read time-out
    # (long-lived streams), but a bounded connect so a missing upstream answers 502 promptly.
    async with (
        AsyncAgent(settings.tasks_url, token, timeout=httpx.Timeout(10.0, connect=3.0)) as tasks,
        httpx.AsyncClient(timeout=httpx.Timeout(None, connect=5.0), follow_redirects=False) as proxying,
    ):
        app.state.settings = settings
        app.state.tasks = tasks
        app.state.proxies = proxy.Proxies(
            tasks=proxy.Upstream("task", settings.tasks_url, "/api", proxying, token),
            desktop=proxy.Upstream(
                "desktop", settings.desktop_url, "", proxying, desktop_token or token, live_view_only=True
            ),
        )
        app.state.directory = DesktopDirectory(tasks)
        with collector.serving():
            yield
    await tracing.flush()


def create_app(
    settings: UISettings | None = None,
    security: SecuritySettings | None = None,
    metrics_settings: MetricsSettings | None = None,
) -> FastAPI:
    """``security`` and ``metrics_settings`` default to the environment (``DESKPILOT_*``)."""
    logs.configure()
    if settings is None:
        config.log_renamed_variables(log)
    settings = settings or UISettings()
    policy, token, sessions = ui_access(security or SecuritySettings(), settings.session_ttl)
    throttle = Throttle(settings.login_free_attempts, settings.login_max_delay)
    app = FastAPI(
        title="Deskpilot UI",
        version=__version__,
        lifespan=lambda app: services(app, settings, token),
        docs_url=None,
        redoc_url=None,
        exception_handlers=fragments.ERROR_HANDLERS,
        telemetry=tracing.telemetry("deskpilot-ui"),  # FastAPI's span of each request (deskpilot/tracing.py)
    )
    app.state.credentials = policy.credentials
    app.state.sessions = sessions
    app.state.throttle = throttle
    app.mount("/static", StaticFiles(directory=Path(__file__).parent / "static"), name="static")
    for module in (login, pages, fragments, proxy):
        app.include_router(module.router)
    app.add_middleware(UIGuard, policy=policy, sessions=sessions, throttle=throttle)
    if metrics.enabled(metrics_settings):  # GET /metrics; every request counted, the guard's refusals too
        registry = metrics.new_registry()
        app.router.routes.append(metrics.route(registry))
        app.add_middleware(RequestCounter, registry=registry)
    deny_framing(app)  # on every answer, the guard's refusals and the proxied live view included
    return app
