"""``/tasks/{id}/messages``: the conversation of a task."""

from __future__ import annotations

from fastapi import APIRouter
from starlette.responses import Response

from deskpilot.taskapi.requests import MessageCreate
from deskpilot.taskapi.types import MessageOut, Role
from deskpilot.tasks.deps import Service
from deskpilot.tasks.routes.tasks import ERRORS, PageQuery
from deskpilot.tasks.schemas import message_json
from deskpilot.web import json_response

router = APIRouter(prefix="/tasks/{task_id}/messages", tags=["messages"])


@router.post("", status_code=201, response_model=MessageOut, responses=ERRORS)
async def add_message(task_id: str, body: MessageCreate, service: Service) -> Response:
    """A USER message; on a NEEDS_HELP, NEEDS_REVIEW, COMPLETED or FAILED task it re-queues the task."""
    msg = await service.store.add_message(task_id, body.blocks(), Role.USER)
    return json_response(message_json(msg), 201)


@router.get("", response_model=list[MessageOut], responses=ERRORS)
async def list_messages(task_id: str, service: Service, paging: PageQuery) -> Response:
    """Messages oldest first; `X-Total-Count` is the task's message count."""
    messages, total = await service.store.list_messages(task_id, paging.limit, paging.offset)
    return json_response([message_json(m) for m in messages], headers={"X-Total-Count": str(total)})
