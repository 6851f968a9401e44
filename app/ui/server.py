"""The web UI server (port 9992): server-rendered pages, HTML fragments for live updates, one-origin proxy.

Pages are rendered here with Jinja2 from the agent's API, so the first paint needs no JavaScript.
A little plain JavaScript then listens on the agent's WebSocket (through `/api/ws`) and asks this
server for fresh fragments, so every piece of HTML has one template. `/api/*` and `/vnc*` are
proxied (HTTP and WebSocket) so a browser only ever talks to this port.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import httpx
from fastapi import FastAPI, Request
from fastapi.responses import HTMLResponse, JSONResponse, RedirectResponse
from fastapi.staticfiles import StaticFiles
from fastapi.templating import Jinja2Templates

from app import __version__, logs
from app.config import PROVIDERS, PROXY_VAR, UISettings
from app.errors import agent_error_body
from app.tasks.types import TaskPriority
from app.ui.agent import FILTERS, AgentClient, AgentFailed, AgentUnavailable, statuses_for
from app.ui.conversation import render_message
from app.ui.proxy import Upstream, add_proxy_routes

HERE = Path(__file__).parent

STATUS_LABELS: dict[str, str] = {
    "PENDING": "Queued",
    "IN_PROGRESS": "Running",
    "NEEDS_HELP": "Needs help",
    "NEEDS_REVIEW": "Needs review",
    "COMPLETED": "Completed",
    "CANCELLED": "Cancelled",
    "FAILED": "Failed",
}


def _templates() -> Jinja2Templates:
    templates = Jinja2Templates(directory=HERE / "templates")
    env = templates.env
    env.globals.update(
        status_labels=STATUS_LABELS,
        priorities=[p.value for p in TaskPriority],
        providers=PROVIDERS,
        proxy_var=PROXY_VAR,
        filters=FILTERS,
        version=__version__,
    )
    env.filters["status_label"] = lambda value: STATUS_LABELS.get(value, str(value).replace("_", " ").title())
    env.filters["title_case"] = lambda value: str(value or "").replace("_", " ").title()
    env.filters["render_message"] = render_message
    return templates


def without_messages(task: dict) -> dict:
    return {k: v for k, v in task.items() if k not in ("messages", "files")}


def create_app(settings: UISettings | None = None) -> FastAPI:
    logs.configure()
    settings = settings or UISettings()
    templates = _templates()

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        # Page rendering: short time-outs so "agent down" shows quickly. Proxy: no read time-out
        # (long-lived streams), but a bounded connect so a missing upstream answers 502 promptly.
        pages = httpx.AsyncClient(timeout=httpx.Timeout(10.0, connect=3.0))
        proxy = httpx.AsyncClient(timeout=httpx.Timeout(None, connect=5.0), follow_redirects=False)
        app.state.agent = AgentClient(settings.agent_url, pages)
        app.state.agent_proxy = Upstream("agent", settings.agent_url, "/api", proxy)
        app.state.desktop_proxy = Upstream("desktop", settings.desktop_url, "", proxy)
        try:
            yield
        finally:
            await pages.aclose()
            await proxy.aclose()

    app = FastAPI(title="Deskpilot UI", version=__version__, lifespan=lifespan, docs_url=None, redoc_url=None)
    app.mount("/static", StaticFiles(directory=HERE / "static"), name="static")

    def agent(request: Request) -> AgentClient:
        return request.app.state.agent

    def page(request: Request, name: str, context: dict, status_code: int = 200) -> HTMLResponse:
        context.setdefault("agent_url", settings.agent_url)
        return templates.TemplateResponse(request, name, context, status_code=status_code)

    async def models_state(request: Request) -> dict:
        """The model picker's options, or why there are none."""
        try:
            return {"models": await agent(request).models(), "models_error": None}
        except (AgentUnavailable, AgentFailed) as exc:
            return {"models": None, "models_error": str(exc)}

    async def task_list(request: Request, filter_key: str, offset: int) -> dict:
        limit = settings.page_size
        ctx: dict = {"filter": filter_key, "offset": offset, "limit": limit, "tasks": [], "total": 0}
        try:
            ctx["tasks"], ctx["total"] = await agent(request).list_tasks(
                statuses_for(filter_key), limit, offset
            )
            ctx["error"] = None
        except (AgentUnavailable, AgentFailed) as exc:
            ctx["error"] = str(exc)
        return ctx

    @app.get("/health")
    def health() -> dict:
        return {"status": "ok", "version": __version__}

    # ------------------------------------------------------------------------------------------ pages

    @app.get("/", response_class=HTMLResponse)
    async def index(request: Request, filter: str = "all", offset: int = 0) -> HTMLResponse:
        ctx = await task_list(request, filter, max(offset, 0))
        ctx.update(await models_state(request))
        return page(request, "index.html", ctx)

    @app.get("/tasks/new", response_class=HTMLResponse)
    async def new_task(request: Request) -> HTMLResponse:
        return page(request, "new.html", await models_state(request))

    @app.get("/tasks/{task_id}", response_class=HTMLResponse)
    async def task_detail(request: Request, task_id: str) -> HTMLResponse:
        try:
            task = await agent(request).get_task(task_id)
        except AgentUnavailable as exc:
            return page(request, "task.html", {"task": None, "task_id": task_id, "error": str(exc)}, 502)
        except AgentFailed as exc:
            return page(
                request, "task.html", {"task": None, "task_id": task_id, "error": exc.message}, exc.status
            )
        ctx = {"task": task, "task_id": task_id, "error": None}
        ctx["task_state"] = without_messages(task)
        if task.get("status") == "PENDING":  # say why it may not start
            ctx.update(await models_state(request))
        return page(request, "task.html", ctx)

    # -------------------------------------------------------------------------------------- fragments

    @app.get("/fragments/tasks", response_class=HTMLResponse)
    async def task_rows(request: Request, filter: str = "all", offset: int = 0) -> HTMLResponse:
        ctx = await task_list(request, filter, max(offset, 0))
        return page(request, "_task_rows.html", ctx, 502 if ctx["error"] else 200)

    @app.get("/fragments/tasks/{task_id}/messages", response_class=HTMLResponse)
    async def message_items(request: Request, task_id: str, offset: int = 0) -> HTMLResponse:
        messages = await agent(request).messages(task_id, max(offset, 0))
        return page(request, "_messages.html", {"messages": messages})

    @app.get("/fragments/tasks/{task_id}/state")
    async def task_state(request: Request, task_id: str) -> JSONResponse:
        """The task without its messages: a page catching up needs the status, not every screenshot."""
        return JSONResponse(without_messages(await agent(request).get_task(task_id)))

    # Fragments let these through: the page's script shows the message.
    @app.exception_handler(AgentUnavailable)
    async def agent_unavailable(request: Request, exc: AgentUnavailable) -> JSONResponse:
        return JSONResponse(agent_error_body(502, str(exc)), 502)

    @app.exception_handler(AgentFailed)
    async def agent_failed(request: Request, exc: AgentFailed) -> JSONResponse:
        return JSONResponse(agent_error_body(exc.status, exc.message), exc.status)

    # ------------------------------------------------------------------------------------------ proxy

    add_proxy_routes(app, "agent_proxy", "/api/{path:path}")
    add_proxy_routes(app, "desktop_proxy", "/vnc", "/vnc/{path:path}")

    @app.get("/tasks", include_in_schema=False)
    def tasks_alias() -> RedirectResponse:
        return RedirectResponse("/", status_code=307)

    return app
