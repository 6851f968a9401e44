"""``/tasks``: create, list, read, change and delete tasks."""

from __future__ import annotations

import asyncio
import re
from dataclasses import dataclass
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query, Request
from starlette.responses import Response

from deskpilot.errors import BadRequest
from deskpilot.taskapi.requests import TaskPatch
from deskpilot.taskapi.types import ErrorOut, ModelOut, TaskDetail, TaskOut, TaskStatus
from deskpilot.tasks.deps import Service
from deskpilot.tasks.journal_steps import task_journal_steps
from deskpilot.tasks.retention import check_served
from deskpilot.tasks.schemas import task_detail_json, task_json
from deskpilot.tasks.trajectory import trajectory
from deskpilot.tasks.uploads import MULTIPART_SCHEMA, read_create_request
from deskpilot.tasks.video import with_video
from deskpilot.web import json_response

router = APIRouter(prefix="/tasks", tags=["tasks"])

_ONE_STATUS = "|".join(TaskStatus)
STATUSES_PATTERN = rf"^({_ONE_STATUS})(,({_ONE_STATUS}))*$"
ERRORS: dict[int | str, dict[str, Any]] = {400: {"model": ErrorOut}, 404: {"model": ErrorOut}}
TASK_ID_ERRORS: dict[int | str, dict[str, Any]] = {404: {"model": ErrorOut, "description": "unknown task id"}}
Limit = Annotated[int, Query(ge=1, le=1000, description="items per page")]
Offset = Annotated[int | None, Query(ge=0, le=1_000_000_000, description="items to skip")]
Page = Annotated[int | None, Query(ge=1, le=1_000_000, description="1-based page of `limit` items")]


@dataclass(frozen=True)
class Paging:
    limit: int
    offset: int


def paging(limit: Limit = 100, offset: Offset = None, page: Page = None) -> Paging:
    """``offset``, or ``page`` (1-based, as clients such as Bytebot's UI send it): never silently page 1."""
    if page is not None and offset is not None:
        raise BadRequest("page: give either 'page' or 'offset', not both")
    return Paging(limit, (page - 1) * limit if page is not None else offset or 0)


PageQuery = Annotated[Paging, Depends(paging)]


@router.post(
    "",
    status_code=201,
    response_model=TaskOut,
    responses={**ERRORS, 413: {"model": ErrorOut, "description": "upload too large"}},
    openapi_extra={
        "requestBody": {
            "required": True,
            "content": {
                "application/json": {"schema": {"$ref": "#/components/schemas/TaskCreate"}},
                "multipart/form-data": {"schema": MULTIPART_SCHEMA},
            },
        }
    },
)
async def create_task(request: Request, service: Service) -> Response:
    """Create a PENDING task from JSON (files as base64) or multipart/form-data (`files` parts)."""
    body, files = await read_create_request(request, service.settings)
    task = await service.store.create_task(
        body.description,
        priority=body.priority,
        type=body.type,
        scheduled_for=body.scheduled_for,
        model=body.model,
        created_by=body.created_by,
        files=files,
        desktop=body.desktop,
        desktop_label=body.desktop_label,
    )
    return json_response(task_json(task), 201)


@router.get("", response_model=list[TaskOut], responses=ERRORS)
async def list_tasks(
    service: Service,
    paging: PageQuery,
    status: Annotated[TaskStatus | None, Query(description="only tasks in this status")] = None,
    statuses: Annotated[
        list[str] | None,
        Query(
            description="several statuses, comma-separated or repeated",
            json_schema_extra={"items": {"type": "string", "pattern": STATUSES_PATTERN}},
        ),
    ] = None,
) -> Response:
    """Tasks newest first; `X-Total-Count` is the number matching the filter."""
    wanted: set[str] = {status} if status else set()
    for item in statuses or []:
        # the documented pattern, so an empty or malformed list is refused rather than ignored
        if not re.fullmatch(STATUSES_PATTERN, item):
            bad = next((v for v in item.split(",") if v not in TaskStatus.__members__), item)
            raise BadRequest(f"statuses: unknown status {bad!r}; one of {', '.join(TaskStatus)}")
        wanted.update(item.split(","))
    tasks, total = await service.store.list_tasks(wanted or None, paging.limit, paging.offset)
    return json_response([task_json(t) for t in tasks], headers={"X-Total-Count": str(total)})


@router.get("/in-progress", response_model=TaskOut | None)
async def in_progress(service: Service) -> Response:
    """The task IN_PROGRESS (this agent's own first), or `null`."""
    task = await service.in_progress()
    return json_response(task_json(task) if task else None)


@router.get("/models", response_model=list[ModelOut])
async def models(service: Service) -> Response:
    """Models the agent can use (empty when none is configured)."""
    return json_response(await service.models())


@router.get("/{task_id}", response_model=TaskDetail, responses=TASK_ID_ERRORS)
async def get_task(task_id: str, service: Service) -> Response:
    task, messages, files = await service.store.get_task_detail(task_id)
    return json_response(task_detail_json(task, messages, files))


TRAJECTORY_ERRORS: dict[int | str, dict[str, Any]] = {
    **ERRORS,
    200: {"content": {"application/zip": {}}, "description": "the archive"},
    410: {"model": ErrorOut, "description": "past TASKS_TRAJECTORY_RETENTION_DAYS: neither kept nor served"},
    501: {"model": ErrorOut, "description": "video asked for, and no ffmpeg where the service runs"},
    503: {"model": ErrorOut, "description": "the video took longer than TASKS_TRAJECTORY_VIDEO_TIMEOUT"},
}


@router.get("/{task_id}/trajectory", responses=TRAJECTORY_ERRORS)
async def get_trajectory(
    task_id: str,
    service: Service,
    video: Annotated[bool, Query(description="add trajectory.mp4 of the frames (needs ffmpeg)")] = False,
) -> Response:
    """The task's trajectory as a zip: ``trajectory.jsonl`` (its steps: actor, action, outcome, frames) and
    the frames as PNG, for ``deskpilot replay``; with ``video=true`` also ``trajectory.mp4``, one frame per
    step. At most ``TASKS_TRAJECTORY_MAX_BYTES`` (its header's ``truncated`` says what was left out); 410 past
    ``TASKS_TRAJECTORY_RETENTION_DAYS`` (docs/evaluation.md)."""
    task, messages, _ = await service.store.get_task_detail(task_id)
    check_served(task, service.settings.trajectory_retention_days)
    journal = await task_journal_steps(service, task)
    max_bytes = service.settings.trajectory_max_bytes
    archive = await asyncio.to_thread(trajectory, task, messages, max_bytes, journal)
    if video:
        archive = await asyncio.to_thread(with_video, archive, service.settings)
    name = f"trajectory-{task.id}.zip"
    headers = {"Content-Disposition": f'attachment; filename="{name}"'}
    return Response(archive, media_type="application/zip", headers=headers)


@router.patch("/{task_id}", response_model=TaskOut, responses=ERRORS)
async def patch_task(task_id: str, body: TaskPatch, service: Service) -> Response:
    """Change `status` (allowed moves only), `priority`, or `description` while PENDING."""
    task = await service.update(
        task_id, status=body.status, priority=body.priority, description=body.description
    )
    return json_response(task_json(task))


@router.delete("/{task_id}", status_code=204, responses=TASK_ID_ERRORS)
async def delete_task(task_id: str, service: Service) -> Response:
    """Delete the task with its messages and files; a running task is cancelled first."""
    await service.delete(task_id)
    return Response(status_code=204)


@router.post("/{task_id}/takeover", response_model=TaskOut, responses=ERRORS)
async def takeover(task_id: str, service: Service) -> Response:
    """A human takes control of the desktop: the agent takes no action until /resume."""
    return json_response(task_json(await service.take_over(task_id)))


@router.post("/{task_id}/resume", response_model=TaskOut, responses=TASK_ID_ERRORS)
async def resume(task_id: str, service: Service) -> Response:
    """Control goes back to the agent."""
    return json_response(task_json(await service.hand_back(task_id)))
