"""``GET /journal`` and ``GET /journal/frames/{id}``, and who sent a ``POST /computer-use``.

A request is the API's (``api``) unless it names the agent: ``X-Deskpilot-Actor: agent``, with
``X-Deskpilot-Task: <task id>`` for the task it acts for (the task service's desktop client sends both). The
header is a label, not a credential: whoever holds the token may act, and may say for whom.
"""

from __future__ import annotations

import re
from typing import Any, Literal

from fastapi import APIRouter, Request
from pydantic import BaseModel, Field, ValidationError, field_validator
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.requests import HTTPConnection
from starlette.responses import Response

from deskpilot.desktop.journal import ACTORS
from deskpilot.errors import InvalidAction, first_problem
from deskpilot.web import json_response

ACTOR_HEADER, TASK_HEADER = "X-Deskpilot-Actor", "X-Deskpilot-Task"
SENDERS = ("api", "agent")  # what a request may say it is: MCP and the human are recorded where they arrive
TASK_ID = re.compile(r"[A-Za-z0-9._:-]{1,64}")
FRAME_ID = re.compile(r"[0-9a-f]{32}")
MAX_PAGE = 1000


def sender(request: HTTPConnection) -> tuple[str, str | None]:
    """(actor, task) of a ``POST /computer-use`` (or of an action channel); 400 for a header it cannot be."""
    actor = request.headers.get(ACTOR_HEADER, "api").strip().lower()
    if actor not in SENDERS:
        raise InvalidAction(f"{ACTOR_HEADER}: must be one of {', '.join(SENDERS)}, not {actor[:40]!r}")
    task = request.headers.get(TASK_HEADER)
    if task is not None and not TASK_ID.fullmatch(task):
        raise InvalidAction(f"{TASK_HEADER}: must be 1-64 letters, digits, '.', '_', ':' or '-'")
    return actor, task


class JournalQuery(BaseModel):
    """The query of ``GET /journal``."""

    since: int = Field(default=0, ge=0, le=2**53, description="the seq to start after (0: the oldest kept)")
    limit: int = Field(default=100, ge=1, le=MAX_PAGE, description="entries looked at, at most")
    actor: str | None = Field(default=None, description=f"comma-separated actors: {', '.join(ACTORS)}")

    @field_validator("actor")
    @classmethod
    def _known(cls, value: str | None) -> str | None:
        unknown = [a for a in (value or "").split(",") if a not in ACTORS] if value is not None else []
        if unknown:
            raise ValueError(f"unknown actor {unknown[0][:40]!r}; actors are {', '.join(ACTORS)}")
        return value


class JournalEntry(BaseModel):
    seq: int
    time: str
    actor: Literal["agent", "api", "mcp", "human"]
    task: str | None
    action: dict[str, Any]
    outcome: dict[str, Any]
    input: bool
    frameAfter: str | None


class JournalPage(BaseModel):
    """200 body of ``GET /journal``: ``next`` is the ``since`` of the next page."""

    success: Literal[True]
    entries: list[JournalEntry]
    next: int
    oldest: int
    latest: int
    frames: dict[str, int]


def parse_query(params: dict[str, str]) -> JournalQuery:
    try:
        return JournalQuery.model_validate(params)
    except ValidationError as exc:
        raise InvalidAction(first_problem(exc)) from None


def _parameter(name: str, field: dict[str, Any]) -> dict[str, Any]:
    return {"name": name, "in": "query", "required": False, "schema": field}


router = APIRouter()
QUERY_SCHEMA = JournalQuery.model_json_schema()["properties"]


@router.get(
    "/journal",
    summary="Every action that reached the desktop, whoever sent it (agent, api, mcp, human)",
    response_model=None,
    responses={200: {"model": JournalPage}, 400: {"description": "a bad query parameter"}},
    openapi_extra={"parameters": [_parameter(name, schema) for name, schema in QUERY_SCHEMA.items()]},
)
async def journal(request: Request) -> Response:
    query = parse_query(dict(request.query_params))
    actors = frozenset(query.actor.split(",")) if query.actor is not None else None
    return json_response(request.app.state.controller.journal.page(query.since, query.limit, actors))


@router.get(
    "/journal/frames/{frame_id}",
    summary="A frame of the journal (PNG), by the id an entry's frameAfter names",
    response_class=Response,
    responses={200: {"content": {"image/png": {}}}, 404: {"description": "no such frame (or evicted)"}},
)
async def frame(request: Request, frame_id: str) -> Response:
    frames = request.app.state.controller.journal.frames
    png = frames.get(frame_id) if FRAME_ID.fullmatch(frame_id) else None
    if png is None:
        missing = f"frame {frame_id[:40]!r} is not in the journal (evicted, or never kept)"
        raise StarletteHTTPException(404, missing)
    return Response(png, media_type="image/png", headers={"Cache-Control": "private, max-age=86400"})
