"""The desktop service's HTTP routes: a table of contents, every action lives in the controller.

Run with one worker: ``uvicorn --factory deskpilot.desktop.api:create_app --port 9990`` (settings from the
environment, see ``DesktopSettings``).
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any, Literal

from fastapi import APIRouter, FastAPI, Request
from fastapi.openapi.utils import get_openapi
from pydantic import BaseModel
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.responses import Response

from deskpilot import __version__, collector, logs, metrics, tracing
from deskpilot.computer import actions
from deskpilot.config import DesktopSettings, MetricsSettings, SecuritySettings
from deskpilot.desktop import channel, command, compat_bytebot, journal_routes, spans, vnc
from deskpilot.desktop.body import install_gate, parse_action_body, read_action_body
from deskpilot.desktop.controller import DesktopController
from deskpilot.desktop.mcp import MCPEndpoint
from deskpilot.desktop.metrics import DesktopMetrics
from deskpilot.errors import (
    DesktopError,
    desktop_error_body,
    desktop_error_headers,
    failure_body,
    internal_error_text,
)
from deskpilot.security import Guard, authorized, deny_framing, policy_for
from deskpilot.web import json_response

# A /health probe answers None when healthy, else what is wrong; each is bounded by PROBE_TIMEOUT_S.
HealthProbe = Callable[[], Awaitable[str | None]]
PROBE_TIMEOUT_S = 1.0


class ActionResult(BaseModel):
    """200 body. ``data`` is ``{image}`` for screenshot, ``{x, y}`` for cursor_position and the base64
    content for read_file (which also sets name, size, mediaType); write_file sets ``message``."""

    success: Literal[True]
    data: dict[str, Any] | str | None = None
    message: str | None = None
    name: str | None = None
    size: int | None = None
    mediaType: str | None = None


class ErrorBody(BaseModel):
    """Every failure: what is wrong and how to fix it (file actions repeat it as ``message``)."""

    success: Literal[False]
    error: str
    message: str | None = None


class ResetResult(BaseModel):
    """200 body of ``POST /reset``: application windows closed, home entries deleted, milliseconds taken."""

    success: Literal[True]
    closed: int
    removed: int
    ms: float


router = APIRouter()


@router.post(
    "/computer-use",
    summary="Perform one desktop action (the field `action` selects it)",
    response_model=None,
    responses={
        200: {"model": ActionResult},
        **{status: {"model": ErrorBody} for status in (400, 404, 409, 413, 500, 503, 504)},
    },
    openapi_extra={
        "requestBody": {
            "required": True,
            "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Action"}}},
        }
    },
)
async def computer_use(request: Request) -> Response:
    actor, task = journal_routes.sender(request)
    action = parse_action_body(await read_action_body(request))
    caller = spans.traceparent(request.scope)
    outcome = await request.app.state.controller.perform(action, actor, task, caller)
    return Response(outcome.to_json(), media_type="application/json")


@router.post(
    "/reset",
    summary="A clean desktop between two tests: input released, applications closed, home reset",
    responses={200: {"model": ResetResult}, **{status: {"model": ErrorBody} for status in (404, 409, 503)}},
)
async def reset(request: Request) -> Response:
    actor, task = journal_routes.sender(request)
    controller = request.app.state.controller
    with controller.journal.recording(actor, {"action": "reset"}, task) as recorded:
        report = dataclasses.asdict(await controller.reset())
        recorded.update(report)  # closed, removed, ms
    return json_response({"success": True, **report})


@router.post(
    "/command",
    summary="A shell command as the desktop user, its output returned (for test harnesses)",
    response_model=None,
    responses={200: {"model": command.CommandResult}, 400: {"model": ErrorBody}, 413: {"model": ErrorBody}},
    openapi_extra={
        "requestBody": {
            "required": True,
            "content": {"application/json": {"schema": command.CommandRequest.model_json_schema()}},
        }
    },
)
async def run_command(request: Request) -> Response:
    actor, task = journal_routes.sender(request)
    body = command.parse_request(actions.load_json(await read_action_body(request)))
    controller = request.app.state.controller
    asked = {"action": "command", "command": body.command, "timeout": body.timeout}
    with controller.journal.recording(actor, asked, task) as recorded:  # the command, never its output
        result = await controller.hands.command(body)
        recorded.update(exitCode=result.exit_code, timedOut=result.timed_out, ms=result.ms)
    return Response(result.model_dump_json(), media_type="application/json")


@router.get(
    "/health",
    summary="Readiness: 200 when every probe passes, else 503; what is wrong only with the token",
    responses={503: {"description": "degraded: `problems` says what is wrong, per probe (with the token)"}},
)
async def health(request: Request) -> Response:
    probes: dict[str, HealthProbe] = request.app.state.health_probes
    results = await asyncio.gather(*(bounded(probe) for probe in probes.values()))
    problems = {name: problem for name, problem in zip(probes, results, strict=True) if problem}
    body: dict[str, Any] = {"status": "degraded" if problems else "ok"}
    if authorized(request.scope):  # the probes' details, the version: for the token's holders only
        body |= {
            **{name: name not in problems for name in probes},
            "capture": request.app.state.controller.connections.capture_path,
            "version": __version__,
        }
        if problems:
            body["problems"] = problems
    return json_response(body, 503 if problems else 200)


@router.get("/health/live", summary="Liveness: the service answers (whatever the state of the display)")
async def live(request: Request) -> Response:
    return json_response({"status": "ok", **({"version": __version__} if authorized(request.scope) else {})})


async def bounded(probe: HealthProbe) -> str | None:
    try:
        async with asyncio.timeout(PROBE_TIMEOUT_S):
            return await probe()
    except TimeoutError:
        return f"no answer within {PROBE_TIMEOUT_S:g} s"


# ---------------------------------------------------------------------------------- exception handlers


async def desktop_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, DesktopError)
    return json_response(desktop_error_body(exc), exc.status, desktop_error_headers(exc))


async def http_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, StarletteHTTPException)
    return json_response(failure_body(str(exc.detail)), exc.status_code, dict(exc.headers or {}))


async def internal_error(request: Request, exc: Exception) -> Response:
    return json_response(failure_body(internal_error_text(exc)), 500)


def openapi_with_actions(app: FastAPI) -> dict[str, Any]:
    """FastAPI's schema plus the action union, which the route reads from the raw body itself."""
    if app.openapi_schema is None:
        schema = get_openapi(title=app.title, version=app.version, summary=app.summary, routes=app.routes)
        union, defs = actions.openapi_schema()
        components = schema.setdefault("components", {}).setdefault("schemas", {})
        components.update(defs)
        components["Action"] = union
        app.openapi_schema = schema
    return app.openapi_schema


def install_metrics(app: FastAPI, controller: DesktopController, settings: MetricsSettings | None) -> None:
    """``GET /metrics`` (``deskpilot/desktop/metrics.py``): the controller records each action; a scrape
    asks the display probe (bounded as /health's) and reads the capture path."""
    if not metrics.enabled(settings):
        return
    registry = metrics.new_registry()
    families = controller.metrics = DesktopMetrics(registry)

    async def refresh(request: Request) -> None:
        families.scraped(await bounded(controller.display_problem), controller.connections.capture_path)

    app.router.routes.append(metrics.route(registry, refresh))


def refusal(status: int, message: str, headers: dict[str, str]) -> Response:
    """The Guard's refusals (deskpilot/security.py) in the desktop's error shape."""
    return json_response(failure_body(message), status, headers)


def create_app(
    settings: DesktopSettings | None = None,
    controller: DesktopController | None = None,
    security: SecuritySettings | None = None,
    metrics_settings: MetricsSettings | None = None,
) -> FastAPI:
    """``security`` and ``metrics_settings`` default to the environment (``DESKPILOT_*``); the appliance
    gives this service only the token's digest, ``DESKPILOT_TOKEN_SHA256``."""
    logs.configure()
    settings = settings or DesktopSettings()
    security = security or SecuritySettings()
    controller = controller or DesktopController(settings)
    mcp = MCPEndpoint(controller, security)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        async with mcp.lifespan():
            with collector.serving():
                yield
        controller.close()
        await asyncio.to_thread(spans.drain)  # the spans still queued, posted
        await tracing.flush()

    app = FastAPI(
        title="Deskpilot desktop",
        version=__version__,
        summary="Drive a real Linux desktop: mouse, keyboard, screenshots, applications, files.",
        lifespan=lifespan,
        # no server span of FastAPI's: an action's span is the controller's, a child of its caller's
        telemetry=tracing.telemetry("deskpilot-desktop", server_spans=False),
        exception_handlers={
            DesktopError: desktop_error,
            StarletteHTTPException: http_error,
            Exception: internal_error,
        },
    )
    app.state.controller = controller
    # /health reports every probe by name; the appliance adds e.g. app.state.health_probes["vnc"]
    app.state.health_probes = controller.health_probes()  # display, accessibility (with the hands worker)
    app.include_router(router)
    app.include_router(channel.router)  # GET /computer-use/ws: the same actions on one open WebSocket
    app.include_router(journal_routes.router)  # GET /journal, /journal/frames/{id}
    app.include_router(compat_bytebot.router)  # Bytebot's wire format, the same controller
    app.openapi = lambda: openapi_with_actions(app)  # type: ignore[method-assign]
    app.router.routes.extend(mcp.routes)  # /mcp: SSE and streamable HTTP (deskpilot/desktop/mcp.py)
    install_metrics(app, controller, metrics_settings)  # GET /metrics, unless DESKPILOT_METRICS=off
    vnc.install(app, settings)  # /vnc live view; keep it after the other routes
    # Host, Origin, content type and token, before any route (HTTP and WebSocket: /vnc/websockify too)
    install_gate(app, settings)  # request bodies within DESKTOP_BODY_BUDGET_BYTES (inside the Guard)
    app.add_middleware(Guard, policy=policy_for("desktop", security), refuse=refusal)
    deny_framing(app)  # no response may be framed (clickjacking /docs into POST /reset, say)
    return app
