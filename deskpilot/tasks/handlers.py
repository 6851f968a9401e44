"""The task service's error handlers: every 4xx/5xx as ``{statusCode, message, error}``."""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from sqlalchemy.exc import DBAPIError
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import Match

from deskpilot.errors import AgentError, StorageFull, task_error_body
from deskpilot.tasks.storage import MESSAGE, out_of_space
from deskpilot.web import json_response

log = logging.getLogger(__name__)


def _field(loc: Sequence[object]) -> str:
    """('body', 'files', 0, 'name') -> 'files[0].name'; the location kind (body/query/path) is dropped."""
    parts = list(loc)
    if parts and parts[0] in ("body", "query", "path", "header", "cookie"):
        parts = parts[1:]
    out = ""
    # union members appear as tags such as 'constrained-str' or 'list[ContentBlock]': not fields
    parts = [part for part in parts if not (isinstance(part, str) and ("[" in part or "-" in part))]
    for part in parts:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "body"


def validation_message(errors: Sequence[Mapping[str, Any]]) -> str:
    """One line per invalid field, each starting with the field's name."""
    lines = []
    seen: set[str] = set()
    for error in errors:
        where = _field(error.get("loc", ()))
        if where in seen:  # one line per field (a union reports each of its members)
            continue
        seen.add(where)
        if error.get("type") == "json_invalid":
            lines.append(f"body: invalid JSON ({error.get('ctx', {}).get('error', error.get('msg'))})")
        elif error.get("type") == "missing":
            lines.append(f"{where}: field required")
        else:
            lines.append(f"{where}: {error.get('msg', 'invalid')}")
    return "; ".join(lines) or "invalid request"


def _allowed_methods(request: Request) -> list[str]:
    """Every method any route serves on this path (Starlette names only the first matching route's)."""
    matching = [
        r
        for r in request.app.router.routes
        if getattr(r, "methods", None) and r.matches(request.scope)[0] != Match.NONE
    ]
    # A literal path (/tasks/models) wins over a template that also matches it (/tasks/{task_id}).
    literal = [r for r in matching if getattr(r, "path", None) == request.url.path]
    return sorted({m for r in (literal or matching) for m in getattr(r, "methods", ())})


async def on_agent_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, AgentError)
    return JSONResponse(task_error_body(exc.status, exc.message), status_code=exc.status)


async def on_validation(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, RequestValidationError)
    return JSONResponse(task_error_body(400, validation_message(list(exc.errors()))), status_code=400)


async def on_http(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, StarletteHTTPException)
    if exc.status_code == 404 and exc.detail == "Not Found":
        message = f"Cannot {request.method} {request.url.path}"
    elif exc.status_code == 405:
        message = f"Method {request.method} is not allowed on {request.url.path}"
    else:
        message = str(exc.detail)
    headers = dict(exc.headers or {})
    if exc.status_code == 405:
        headers["Allow"] = ", ".join(_allowed_methods(request))
    return JSONResponse(
        task_error_body(exc.status_code, message), status_code=exc.status_code, headers=headers
    )


async def on_storage(request: Request, exc: Exception) -> Response:
    """A database or file-system error that escaped the store's own translation (an upload spooled to a full
    temporary directory, a read that needed temporary space): 507 when it is a lack of space, which /health
    reports too; anything else is unexpected (500, logged)."""
    if not out_of_space(exc):
        raise exc
    service = getattr(request.app.state, "tasks", None)
    full = service.store.db.space.failed(exc) if service is not None else StorageFull(MESSAGE)
    return JSONResponse(task_error_body(full.status, full.message), status_code=full.status)


async def on_unexpected(request: Request, exc: Exception) -> Response:
    log.exception("unhandled error", extra={"method": request.method, "path": request.url.path})
    return JSONResponse(task_error_body(500, f"Internal server error: {type(exc).__name__}"), status_code=500)


def refusal(status: int, message: str, headers: dict[str, str]) -> Response:
    """The Guard's refusals (deskpilot/security.py) in the task service's error shape."""
    return json_response(task_error_body(status, message), status, headers)


def install_error_handlers(app: FastAPI) -> None:
    """Our errors, FastAPI's validation errors (400, naming the field), unknown routes and methods, a lack
    of disk space (507), and unexpected exceptions."""
    app.add_exception_handler(AgentError, on_agent_error)
    app.add_exception_handler(RequestValidationError, on_validation)
    app.add_exception_handler(StarletteHTTPException, on_http)
    app.add_exception_handler(DBAPIError, on_storage)
    app.add_exception_handler(OSError, on_storage)
    app.add_exception_handler(Exception, on_unexpected)
