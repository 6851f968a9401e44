"""The two error shapes of the spec, one exception type per failure class, mapped to HTTP here only.

Desktop service: ``{"success": false, "error": "<what is wrong and how to fix it>"}``.
Agent service:   ``{"statusCode": 404, "message": "Task with ID <id> not found", "error": "Not Found"}``.
"""

from __future__ import annotations

from http import HTTPStatus

# --------------------------------------------------------------------------------------------- desktop


class DesktopError(Exception):
    """A failed desktop action; ``status`` is the HTTP status the desktop service answers with.

    ``file_action`` is set for write_file/read_file requests, whose error body repeats the text as
    ``message`` (clients of those two actions read that field).
    """

    status: int = 400
    retry_after: int | None = None

    def __init__(self, message: str, *, file_action: bool = False) -> None:
        super().__init__(message)
        self.message = message
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


class AgentError(Exception):
    """A failed agent-service request; rendered as ``{statusCode, message, error}``."""

    status: int = 400

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

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
