"""``GET /computer-use/ws``: the actions of ``POST /computer-use`` over one WebSocket that stays open.

A request costs a new HTTP exchange; a message on an open socket costs a fraction of it, which is most of a
click or a move. Each text (or binary) message is one action, as ``POST /computer-use`` takes it, with an
optional ``id`` (a string of at most 128 characters, or an integer); each gets one answer, in the order sent:
the body the route would answer, with the ``id`` echoed and the HTTP ``status`` as fields (and
``retryAfter`` where HTTP sends ``Retry-After``). With ``?frames=binary`` an answer's image is not base64 in
``data.image``: ``data.imageBytes`` gives its length and the image follows as a binary message of its own.

Back-pressure: one action at a time per socket, the next message read only once the last answer is handed
to the server, so a client that stops reading stops the socket, not memory (what waits is the server's
bounded queue, ``--ws-max-queue`` messages of at most ``--ws-max-size`` bytes). A message is at most
``MAX_MESSAGE`` bytes (close 1009); a larger write_file goes by HTTP, which streams it. Keys and buttons this
socket pressed and did not release are released when it closes, whoever closed it.
"""

from __future__ import annotations

import contextlib
import logging
from dataclasses import dataclass, field
from typing import Any

import orjson
from fastapi import APIRouter
from starlette.websockets import WebSocket, WebSocketDisconnect, WebSocketState

from deskpilot.computer import actions
from deskpilot.desktop import journal_routes
from deskpilot.desktop.controller import DesktopController
from deskpilot.desktop.outcome import Outcome
from deskpilot.errors import (
    DesktopError,
    InvalidAction,
    desktop_error_body,
    failure_body,
    internal_error_text,
)
from deskpilot.web import dumps, json_response

log = logging.getLogger(__name__)

PATH = "/computer-use/ws"
MAX_MESSAGE = 2 << 20  # every action but a write_file of a file of 1.5 MiB or more
MAX_ID_CHARS = 128
FRAMES = ("base64", "binary")
TOO_BIG = 1009  # RFC 6455: a message too big to process

router = APIRouter()


@dataclass(slots=True)
class Held:
    """What this socket holds down: released when it closes."""

    keys: list[str] = field(default_factory=list)
    buttons: set[str] = field(default_factory=set)

    def update(self, action: actions.Action) -> None:
        if isinstance(action, actions.PressKeys):
            if action.press == "down":
                self.keys += [k for k in action.keys if k not in self.keys]
            else:
                self.keys = [k for k in self.keys if k not in action.keys]
        elif isinstance(action, actions.PressMouse):
            (self.buttons.add if action.press == "down" else self.buttons.discard)(action.button)

    def releases(self) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = [
            {"action": "press_mouse", "button": b, "press": "up"} for b in sorted(self.buttons)
        ]
        if self.keys:
            out.append({"action": "press_keys", "keys": self.keys, "press": "up"})
        return out


@router.websocket(PATH)
async def channel(ws: WebSocket) -> None:
    """One action per message, one answer per message, in order (the module's docstring)."""
    frames = ws.query_params.get("frames", "base64")
    try:
        actor, task = journal_routes.sender(ws)
        if frames not in FRAMES:
            raise InvalidAction(f"frames: must be one of {', '.join(FRAMES)}, not {frames[:40]!r}")
    except InvalidAction as exc:  # refused before the upgrade, in the error shape of the route
        await ws.send_denial_response(json_response(desktop_error_body(exc), exc.status))
        return
    await ws.accept()
    controller: DesktopController = ws.app.state.controller
    held = Held()
    try:
        while True:
            message = await ws.receive()
            if message["type"] == "websocket.disconnect":
                return
            raw = message.get("text")
            data = raw.encode() if raw is not None else message.get("bytes") or b""
            if len(data) > MAX_MESSAGE:
                await ws.close(TOO_BIG, f"a message is at most {MAX_MESSAGE} bytes: send larger by HTTP")
                return
            head, image = await answer(controller, data, actor, task, held, frames == "binary")
            await ws.send_bytes(head) if raw is None else await ws.send_text(head.decode())
            if image is not None:
                await ws.send_bytes(image)
    except (WebSocketDisconnect, RuntimeError, OSError):  # the client went away mid-answer
        pass
    finally:
        await release(controller, held, actor, task)
        if ws.client_state == WebSocketState.CONNECTED:
            with contextlib.suppress(WebSocketDisconnect, RuntimeError, OSError):
                await ws.close()


async def answer(
    controller: DesktopController,
    data: bytes,
    actor: str,
    task: str | None,
    held: Held,
    image_apart: bool,
) -> tuple[bytes, bytes | None]:
    """The answer to one message, and the image to send after it (``image_apart``)."""
    ident: str | int | None = None
    try:
        fields = actions.load_json(data)
        if isinstance(fields, dict) and "id" in fields:
            ident = fields.pop("id")
            if not valid_id(ident):
                ident = None
                raise InvalidAction(
                    f"id: must be a string of at most {MAX_ID_CHARS} characters or an integer"
                )
        action = actions.parse_action(fields)
        outcome: Outcome = await controller.perform(action, actor, task)
    except DesktopError as exc:
        head: dict[str, Any] = {"id": ident, "status": exc.status, **desktop_error_body(exc)}
        if exc.retry_after is not None:
            head["retryAfter"] = exc.retry_after
        return dumps(head), None
    except Exception as exc:  # as the HTTP route's handler answers it; the socket stays open
        log.exception("action failed on the channel")
        return dumps({"id": ident, "status": 500, **failure_body(internal_error_text(exc))}), None
    held.update(action)
    body = {"id": ident, "status": 200, **outcome.to_dict(image_apart)}
    image = outcome.image.data if image_apart and outcome.image is not None else None
    return orjson.dumps(body), image


def valid_id(ident: object) -> bool:
    if isinstance(ident, bool):
        return False
    return (isinstance(ident, str) and len(ident) <= MAX_ID_CHARS) or (
        isinstance(ident, int) and abs(ident) < 2**53
    )


async def release(controller: DesktopController, held: Held, actor: str, task: str | None) -> None:
    """Let go of what the socket held down, as actions of its sender (so the journal shows them)."""
    for fields in held.releases():
        try:
            await controller.perform(actions.parse_action(fields), actor, task)
        except Exception:
            log.exception("could not release what a closed channel held", extra={"release": fields})
