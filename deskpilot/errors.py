"""The two error shapes (docs/design.md), one exception type per failure class, mapped to HTTP here only;
and ``ClientError``, what a client raises for either shape.

Desktop service: ``{"success": false, "error": "<what is wrong and how to fix it>"}``.
Task service:   ``{"statusCode": 404, "message": "Task with ID <id> not found", "error": "Not Found"}``.
"""

from __future__ import annotations

from http import HTTPStatus
from typing import Any

from pydantic import ValidationError


def first_problem(exc: ValidationError, whole: str = "") -> str:
    """``where: what`` of the first problem pydantic found (``where`` is ``whole`` for the input itself)."""
    first = exc.errors()[0]
    where = ".".join(str(part) for part in first["loc"]) or whole
    return f"{where}: {first['msg']}"


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


class KeymapFull(InvalidAction):
    """A character is missing from the keyboard layout and the keymap has no spare keycode to put it on:
    the client should paste it instead."""


class FileMissing(DesktopError):
    status = 404


class FileConflict(DesktopError):
    """write_file with ``overwrite: false`` found a file at its path."""

    status = 409


class TooLarge(DesktopError):
    status = 413


# The X edge (deskpilot.desktop.x11, and the capture) raises the three below; no other failure of the X
# server exists for the service. Only a lost display is temporary, and only it drops the X connections.


class DisplayLost(DesktopError):
    """The X display is gone (e.g. Xvfb restarting); the service reconnects on a later request."""

    status = 503
    retry_after = 1


class UnsupportedDisplay(DesktopError):
    """The X display is not the one the service owns (size, depth, owner, extensions): refused until it is
    replaced; /health reports it."""

    status = 500


class HandsUnavailable(DesktopError):
    """The desktop user's worker (files, programs and commands run as that user, ``handsd.py``) does not
    answer: it is restarting."""

    status = 503
    retry_after = 1


class AccessibilityUnavailable(DesktopError):
    """The AT-SPI bus of the desktop session does not answer (at-spi-bus-launcher is not running, or is
    restarting); /health reports it."""

    status = 503
    retry_after = 1


class ActionTimedOut(DesktopError):
    """The desktop did not do something within its bound (an application showed no window); the action
    failed, the display is fine."""

    status = 504


class ClipboardBusy(ActionTimedOut):
    """The clipboard could not be taken in time."""


def failure_body(error: str) -> dict[str, Any]:
    """The desktop service's answer to anything that failed: what is wrong and how to fix it."""
    return {"success": False, "error": error}


def desktop_error_body(exc: DesktopError) -> dict[str, Any]:
    body = failure_body(exc.message)
    if exc.file_action:
        body["message"] = exc.message
    return body


def desktop_error_headers(exc: DesktopError) -> dict[str, str]:
    return {"Retry-After": str(exc.retry_after)} if exc.retry_after is not None else {}


def internal_error_text(exc: BaseException) -> str:
    """What a desktop action's answer says of a failure of ours (HTTP's 500, the channel's, MCP's)."""
    return f"internal error: {type(exc).__name__}: {exc}"


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


class DesktopNotFound(AgentError):
    status = 404

    def __init__(self, name: str) -> None:
        super().__init__(f"Desktop {name} not found: GET /desktops lists the fleet")


class InvalidTransition(AgentError):
    status = 400


class PayloadTooLarge(AgentError):
    status = 413


class TrajectoryExpired(AgentError):
    """The task's trajectory is past its retention (``TASKS_TRAJECTORY_RETENTION_DAYS``)."""

    status = 410


class VideoUnavailable(AgentError):
    """The service cannot make a video here: ffmpeg is not installed (or not where it was told)."""

    status = 501


class VideoTimedOut(AgentError):
    """Encoding a trajectory's video took longer than its time limit."""

    status = 503


class UpstreamUnavailable(AgentError):
    """A service the agent depends on (the LLM proxy) did not answer."""

    status = 502


class StorageFull(AgentError):
    """A write failed for lack of disk space (the database's, or the temporary files of an upload): nothing
    of it was saved, and what was saved before is intact; the same request succeeds once space is freed."""

    status = 507


def reason_phrase(status: int) -> str:
    try:
        return HTTPStatus(status).phrase
    except ValueError:  # an upstream's own status code
        return "Error"


def task_error_body(status: int, message: str) -> dict[str, Any]:
    """The task service's error body; the UI answers in the same shape for its proxy and fragments."""
    return {"statusCode": status, "message": message, "error": reason_phrase(status)}


# ---------------------------------------------------------------------------------------------- clients


class ClientError(Exception):
    """A service refused or failed a client's request, or did not answer (``status`` 0).

    ``detail`` is the service's own message (its ``error`` or ``message`` field); ``message`` also says
    which request it was: ``click_mouse failed (400): coordinates.x: ...``.
    """

    def __init__(self, message: str, status: int = 0, detail: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.status = status
        self.detail = message if detail is None else detail


def error_detail(body: Any) -> str | None:
    """The message of either error shape (``error`` of the desktop's, ``message`` of the task service's)."""
    if not isinstance(body, dict):
        return None
    for key in ("message", "error"):
        if isinstance(body.get(key), str) and body[key]:
            return str(body[key])
    return None
