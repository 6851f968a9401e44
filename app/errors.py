"""The two error shapes of the spec, one exception type per failure class, mapped to HTTP here only.

Desktop service: ``{"success": false, "error": "<what is wrong and how to fix it>"}``.
Agent service:   ``{"statusCode": 404, "message": "Task with ID <id> not found", "error": "Not Found"}``.
"""

from __future__ import annotations

from http import HTTPStatus


class ServiceError(Exception):
    """A client-facing failure: ``message`` says what is wrong, ``status`` is the HTTP status."""

    status: int = 400

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


# --------------------------------------------------------------------------------------------- desktop


class DesktopError(ServiceError):
    """A failed desktop action, rendered as ``{success: false, error}``.

    ``file_action`` is set for write_file/read_file requests, whose error body repeats the text as
    ``message`` (clients of those two actions read that field).
    """

    retry_after: int | None = None

    def __init__(self, message: str, *, file_action: bool = False) -> None:
        super().__init__(message)
        self.file_action = file_action


class InvalidAction(DesktopError):
    status = 400


class FileMissing(DesktopError):
    status = 404


class TooLarge(DesktopError):
    status = 413


class DisplayUnavailable(DesktopError):
    """The X display is gone (e.g. Xvfb restarting); the service reconnects on a later request."""

    status = 503
    retry_after = 1


class ActionTimedOut(DesktopError):
    """An action waited for the desktop longer than its bound (e.g. an application never showed a window)."""

    status = 503
    retry_after = 2


def desktop_error_body(exc: DesktopError) -> dict:
    body: dict = {"success": False, "error": exc.message}
    if exc.file_action:
        body["message"] = exc.message
    return body


def desktop_error_headers(exc: DesktopError) -> dict[str, str]:
    return {"Retry-After": str(exc.retry_after)} if exc.retry_after is not None else {}


# ----------------------------------------------------------------------------------------------- agent


class AgentError(ServiceError):
    """A failed agent-service request; rendered as ``{statusCode, message, error}``."""

    @property
    def reason(self) -> str:
        return HTTPStatus(self.status).phrase


class BadRequest(AgentError):
    status = 400


class TaskNotFound(AgentError):
    status = 404

    def __init__(self, task_id: str) -> None:
        super().__init__(f"Task with ID {task_id} not found")


class InvalidTransition(AgentError):
    status = 400


class PayloadTooLarge(AgentError):
    status = 413


class UpstreamUnavailable(AgentError):
    """A service the agent depends on (the LLM proxy) did not answer."""

    status = 502


def agent_error_body(status: int, message: str) -> dict:
    return {"statusCode": status, "message": message, "error": HTTPStatus(status).phrase}


def _field(loc: tuple | list) -> str:
    """('body', 'files', 0, 'name') -> 'files[0].name'; the location kind (body/query/path) is dropped."""
    parts = list(loc)
    if parts and parts[0] in ("body", "query", "path", "header", "cookie"):
        parts = parts[1:]
    out = ""
    # union members appear as tags such as 'constrained-str' or 'list[ContentBlock]': not fields
    parts = [p for p in parts if not (isinstance(p, str) and ("[" in p or "-" in p))]
    for p in parts:
        out += f"[{p}]" if isinstance(p, int) else (f".{p}" if out else str(p))
    return out or "body"


def validation_message(errors: list) -> str:
    """One line per invalid field, each starting with the field's name."""
    lines = []
    seen: set[str] = set()
    for e in errors:
        where = _field(e.get("loc", ()))
        if where in seen:  # one line per field (a union reports each of its members)
            continue
        seen.add(where)
        if e.get("type") == "json_invalid":
            lines.append(f"body: invalid JSON ({e.get('ctx', {}).get('error', e.get('msg'))})")
        elif e.get("type") == "missing":
            lines.append(f"{where}: field required")
        else:
            lines.append(f"{where}: {e.get('msg', 'invalid')}")
    return "; ".join(lines) or "invalid request"


def _allowed_methods(request) -> list[str]:
    """Every method any route serves on this path (Starlette names only the first matching route's)."""
    from starlette.routing import Match

    matching = [
        r
        for r in request.app.router.routes
        if getattr(r, "methods", None) and r.matches(request.scope)[0] != Match.NONE
    ]
    # A literal path (/tasks/models) wins over a template that also matches it (/tasks/{task_id}).
    literal = [r for r in matching if getattr(r, "path", None) == request.url.path]
    return sorted({m for r in (literal or matching) for m in r.methods})


def install_agent_handlers(app) -> None:
    """Every 4xx/5xx of the agent service as ``{statusCode, message, error}``: our errors, FastAPI's
    validation errors (400, naming the field), unknown routes and methods, and unexpected exceptions."""
    import logging

    from fastapi.exceptions import RequestValidationError
    from fastapi.responses import JSONResponse
    from starlette.exceptions import HTTPException as StarletteHTTPException

    log = logging.getLogger("deskpilot.agent")

    async def on_agent_error(request, exc: AgentError):
        return JSONResponse(agent_error_body(exc.status, exc.message), status_code=exc.status)

    async def on_validation(request, exc: RequestValidationError):
        return JSONResponse(agent_error_body(400, validation_message(list(exc.errors()))), status_code=400)

    async def on_http(request, exc: StarletteHTTPException):
        if exc.status_code == 404 and exc.detail == "Not Found":
            message = f"Cannot {request.method} {request.url.path}"
        elif exc.status_code == 405:
            message = f"Method {request.method} is not allowed on {request.url.path}"
        else:
            message = str(exc.detail)
        headers = getattr(exc, "headers", None)
        if exc.status_code == 405:
            headers = {**(headers or {}), "Allow": ", ".join(_allowed_methods(request))}
        return JSONResponse(
            agent_error_body(exc.status_code, message), status_code=exc.status_code, headers=headers
        )

    async def on_unexpected(request, exc: Exception):
        log.exception("unhandled error on %s %s", request.method, request.url.path)
        return JSONResponse(
            agent_error_body(500, f"Internal server error: {type(exc).__name__}"), status_code=500
        )

    app.add_exception_handler(AgentError, on_agent_error)
    app.add_exception_handler(RequestValidationError, on_validation)
    app.add_exception_handler(StarletteHTTPException, on_http)
    app.add_exception_handler(Exception, on_unexpected)
