"""Bytebot's desktop daemon (bytebotd) under ``/compat/bytebot``: its agent runs unchanged against this
desktop with ``BYTEBOT_DESKTOP_BASE_URL=http://host:9990/compat/bytebot``.

Every action is run by the same ``DesktopController`` as ``POST /computer-use``; this module only speaks
bytebotd's dialect, as its code (not its published interface) has it:

- requests: its application names (``firefox``, ``1password``, ``thunderbird``, ``vscode``) stand for ours,
  and ``type_keys`` is a chord (all keys pressed, ``delay`` ms, 100 by default, all released);
- responses, as its NestJS controller sends them: 201; ``{image}`` for a screenshot and ``{x, y}`` for the
  cursor at the top level; ``{success, ...}`` for the file actions; an empty body for the others;
- errors: a refused request is 400 ``{statusCode, message, error}``; a failed action is 500 ``{statusCode,
  message: "Failed to execute computer action: ..."}``, except a failed file action, which bytebotd answers
  201 ``{success: false, message}``;
- ``/input-tracking/start`` and ``/stop`` are accepted (and answered as bytebotd does) but record nothing.

It stays out of the OpenAPI document: its shapes are Bytebot's, documented in docs/desktop-api.md.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from fastapi import APIRouter, Request
from starlette.responses import Response

from deskpilot.computer import actions
from deskpilot.desktop import spans
from deskpilot.desktop.body import read_action_body
from deskpilot.desktop.controller import DesktopController, Outcome
from deskpilot.errors import DesktopError, InvalidAction, desktop_error_headers, task_error_body
from deskpilot.web import json_response

PREFIX = "/compat/bytebot"
# Bytebot's application names -> ours
APPLICATIONS = {
    "firefox": "browser",
    "1password": "password_manager",
    "thunderbird": "email_client",
    "vscode": "code_editor",
    "terminal": "terminal",
    "desktop": "desktop",
    "directory": "directory",
}
CHORD_DELAY_MS = 100  # bytebotd's pause between pressing and releasing a type_keys chord when not told
FILE_FAILURE = {"read_file": "Error reading file", "write_file": "Error writing file"}

router = APIRouter(prefix=PREFIX, include_in_schema=False)


@dataclass(frozen=True)
class Chord:
    """bytebotd's type_keys: every key pressed in order, held ``delay`` ms, released in reverse order."""

    keys: list[str]
    delay: int


@router.post("/computer-use")
async def computer_use(request: Request) -> Response:
    try:
        body = actions.load_json(await read_action_body(request))
        step = translate(body)
    except DesktopError as exc:  # refused before anything ran: bytebotd's validation pipe, a 400
        return json_response(task_error_body(exc.status, exc.message), exc.status)
    name = body["action"]
    try:
        outcome = await perform(request.app.state.controller, step, spans.traceparent(request.scope))
    except DesktopError as exc:
        if name in FILE_FAILURE:  # bytebotd catches these itself and answers them as a result
            return json_response({"success": False, "message": f"{FILE_FAILURE[name]}: {exc.message}"}, 201)
        message = f"Failed to execute computer action: {exc.message}"
        return json_response({"statusCode": 500, "message": message}, 500, desktop_error_headers(exc))
    return render(name, outcome)


@router.post("/input-tracking/start")
async def start_tracking() -> Response:
    return json_response({"status": "started"}, 201)


@router.post("/input-tracking/stop")
async def stop_tracking() -> Response:
    return json_response({"status": "stopped"}, 201)


def translate(body: Any) -> actions.Action | Chord:
    """Bytebot's request as the action (or chord) that does it, validated whole like any request."""
    if isinstance(body, dict) and body.get("action") == "application":
        body = {**body, "application": our_application(body.get("application"))}
    action = actions.parse_action(body)
    if isinstance(action, actions.TypeKeys):
        return Chord(action.keys, CHORD_DELAY_MS if action.delay is None else action.delay)
    return action


def our_application(name: object) -> str:
    if isinstance(name, str) and name in APPLICATIONS:
        return APPLICATIONS[name]
    raise InvalidAction(f"application: must be one of {', '.join(APPLICATIONS)}, not {name!r}")


async def perform(
    controller: DesktopController, step: actions.Action | Chord, caller: bytes | None
) -> Outcome:
    """``caller``: the request's ``traceparent``, the parent of each action's span."""
    if not isinstance(step, Chord):
        return await controller.perform(step, caller=caller)
    down = actions.PressKeys(action="press_keys", keys=step.keys, press="down")
    await controller.perform(down, caller=caller)
    try:
        await controller.perform(actions.Wait(action="wait", duration=step.delay), caller=caller)
    finally:  # never leave a key held, even when the client goes away meanwhile
        up = actions.PressKeys(action="press_keys", keys=step.keys, press="up")
        await controller.perform(up, caller=caller)
    return Outcome()


def render(name: str, outcome: Outcome) -> Response:
    """bytebotd's answer: what its service returned, as NestJS sends it (201, nothing for undefined)."""
    result = outcome.to_dict()
    if name in ("screenshot", "cursor_position"):
        return json_response(result["data"], 201)  # {image} and {x, y} at the top level
    if name in FILE_FAILURE:
        return json_response(result, 201)
    return Response(status_code=201)
