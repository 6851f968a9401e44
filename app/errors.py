"""The two error shapes of the spec, one exception type per failure class, mapped to HTTP here only.

Desktop service: ``{"success": false, "error": "<what is wrong and how to fix it>"}``.
Agent service:   ``{"statusCode": 404, "message": "Task with ID <id> not found", "error": "Not Found"}``.
"""

from __future__ import annotations

from http import HTTPStatus

# --------------------------------------------------------------------------------------------- desktop


class DesktopError(Exception):
    """A failed desktop action; ``status`` is the HTTP status the desktop service answers with."""

    status: int = 400

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class InvalidAction(DesktopError):
    status = 400


class FileMissing(DesktopError):
    status = 404


class TooLarge(DesktopError):
    status = 413


class DisplayUnavailable(DesktopError):
    status = 503


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
