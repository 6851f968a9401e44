"""The two error shapes (docs/design.md), one exception type per failure class, mapped to HTTP here only.

Desktop service: ``{"success": false, "error": "<what is wrong and how to fix it>"}``.
Agent service:   ``{"statusCode": 404, "message": "Task with ID <id> not found", "error": "Not Found"}``.
"""

from __future__ import annotations

from http import HTTPStatus
from typing import Any


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
        return reason_phrase(self.status)


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


def reason_phrase(status: int) -> str:
    try:
        return HTTPStatus(status).phrase
    except ValueError:  # an upstream's own status code
        return "Error"


def agent_error_body(status: int, message: str) -> dict[str, Any]:
    """The task service's error body; the UI answers in the same shape for its proxy and fragments."""
    return {"statusCode": status, "message": message, "error": reason_phrase(status)}
