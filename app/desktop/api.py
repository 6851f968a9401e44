"""The desktop service's HTTP routes: a table of contents, every action lives in the controller.

Run with one worker: ``uvicorn --factory app.desktop.api:create_app --port 9990`` (settings from the
environment, see ``DesktopSettings``).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from contextlib import asynccontextmanager
from typing import Any, Literal

import orjson
from fastapi import FastAPI, Request
from fastapi.openapi.utils import get_openapi
from fastapi.responses import Response
from pydantic import BaseModel
from starlette.exceptions import HTTPException as StarletteHTTPException

from app import __version__
from app.computer import actions
from app.config import DesktopSettings
from app.desktop import vnc
from app.desktop.controller import DesktopController
from app.desktop.mcp import MCPEndpoint
from app.errors import DesktopError, desktop_error_body, desktop_error_headers

HealthProbe = Callable[[], bool | Any]  # sync or async, returns True when healthy


class ActionResult(BaseModel):
    """200 body. ``data`` is ``{image}`` for screenshot, ``{x, y}`` for cursor_position and the base64
    content for read_file (which also sets name, size, mediaType); write_file sets ``message``."""

    success: Literal[True]
    data: dict | str | None = None
    message: str | None = None
    name: str | None = None
    size: int | None = None
    mediaType: str | None = None


class ErrorBody(BaseModel):
    """Every failure: what is wrong and how to fix it (file actions repeat it as ``message``)."""

    success: Literal[False]
    error: str
    message: str | None = None


def _json(body: dict, status: int = 200, headers: dict[str, str] | None = None) -> Response:
    return Response(orjson.dumps(body), status_code=status, headers=headers, media_type="application/json")


def create_app(
    settings: DesktopSettings | None = None, controller: DesktopController | None = None
) -> FastAPI:
    settings = settings or DesktopSettings()
    controller = controller or DesktopController(settings)
    mcp = MCPEndpoint(controller, settings.mcp_allowed_hosts)

    @asynccontextmanager
    async def lifespan(app: FastAPI):
        async with mcp.lifespan():
            yield
        controller.close()

    app = FastAPI(
        title="Deskpilot desktop",
        version=__version__,
        summary="Drive a real Linux desktop: mouse, keyboard, screenshots, applications, files.",
        lifespan=lifespan,
    )
    app.state.controller = controller
    # /health reports every probe by name; the appliance adds e.g. app.state.health_probes["vnc"]
    app.state.health_probes = {"display": controller.display_ok}

    @app.exception_handler(DesktopError)
    async def desktop_error(request: Request, exc: DesktopError) -> Response:
        return _json(desktop_error_body(exc), exc.status, desktop_error_headers(exc))

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> Response:
        return _json({"success": False, "error": str(exc.detail)}, exc.status_code, exc.headers)

    @app.exception_handler(Exception)
    async def internal_error(request: Request, exc: Exception) -> Response:
        return _json({"success": False, "error": f"internal error: {type(exc).__name__}: {exc}"}, 500)

    errors = {s: {"model": ErrorBody} for s in (400, 404, 413, 500, 503)}

    @app.post(
        "/computer-use",
        summary="Perform one desktop action (the field `action` selects it)",
        response_model=None,
        responses={200: {"model": ActionResult}, **errors},
        openapi_extra={
            "requestBody": {
                "required": True,
                "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Action"}}},
            }
        },
    )
    async def computer_use(request: Request) -> Response:
        action = actions.parse_action_json(await request.body())
        outcome = await controller.perform(action)
        return Response(outcome.to_json(), media_type="application/json")

    @app.get("/health", summary="Liveness and display status")
    async def health() -> dict:
        body: dict[str, Any] = {"status": "ok"}
        for name, probe in app.state.health_probes.items():
            result = probe()
            body[name] = bool(await result if inspect.isawaitable(result) else result)
        if not all(v for k, v in body.items() if k != "status"):
            body["status"] = "degraded"
        body["version"] = __version__
        return body

    def openapi() -> dict:
        if app.openapi_schema is None:
            schema = get_openapi(title=app.title, version=app.version, summary=app.summary, routes=app.routes)
            union, defs = actions.openapi_schema()
            components = schema.setdefault("components", {}).setdefault("schemas", {})
            components.update(defs)
            components["Action"] = union
            app.openapi_schema = schema
        return app.openapi_schema

    app.openapi = openapi
    app.router.routes.extend(mcp.routes)  # /mcp: SSE and streamable HTTP (app/desktop/mcp.py)
    vnc.install(app, settings)  # /vnc live view; keep it after the other routes
    return app
