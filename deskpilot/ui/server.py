"""The web UI server (port 9992): server-rendered pages, HTML fragments for live updates, one-origin proxy.

Pages (``deskpilot.ui.pages``) are rendered here with Jinja2 from the agent's API, so the first paint needs no
JavaScript. A little plain JavaScript then listens on the agent's WebSocket (through `/api/ws`) and asks this
server for fresh fragments (``deskpilot.ui.fragments``), so every piece of HTML has one template. `/api/*` and
`/vnc*` are proxied (HTTP and WebSocket, ``deskpilot.ui.proxy``) so a browser only ever talks to this port.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import httpx
from fastapi import FastAPI
from fastapi.staticfiles import StaticFiles

from deskpilot import __version__, logs
from deskpilot.config import UISettings
from deskpilot.ui import fragments, pages, proxy
from deskpilot.ui.agent import AgentClient


def create_app(settings: UISettings | None = None) -> FastAPI:
    logs.configure()
    settings = settings or UISettings()

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        # Page rendering: short time-outs so "agent down" shows quickly. Proxy: no read time-out
        # (long-lived streams), but a bounded connect so a missing upstream answers 502 promptly.
        async with (
            httpx.AsyncClient(timeout=httpx.Timeout(10.0, connect=3.0)) as rendering,
            httpx.AsyncClient(timeout=httpx.Timeout(None, connect=5.0), follow_redirects=False) as proxying,
        ):
            app.state.settings = settings
            app.state.agent = AgentClient(settings.agent_url, rendering)
            app.state.proxies = proxy.Proxies(
                agent=proxy.Upstream("agent", settings.agent_url, "/api", proxying),
                desktop=proxy.Upstream("desktop", settings.desktop_url, "", proxying),
            )
            yield

    app = FastAPI(
        title="Deskpilot UI",
        version=__version__,
        lifespan=lifespan,
        docs_url=None,
        redoc_url=None,
        exception_handlers=fragments.ERROR_HANDLERS,
    )
    app.mount("/static", StaticFiles(directory=Path(__file__).parent / "static"), name="static")
    for module in (pages, fragments, proxy):
        app.include_router(module.router)
    return app
