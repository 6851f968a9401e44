"""The agent service's HTTP routes (port 9991): parse, call the store or the worker, answer.

Run with ``uvicorn --factory app.agent.api:create_app --port 9991``.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Annotated, Any

import orjson
import pybase64
from fastapi import FastAPI, Query, Request, WebSocket
from fastapi.exceptions import RequestValidationError
from fastapi.middleware.cors import CORSMiddleware
from fastapi.openapi.utils import get_openapi
from fastapi.responses import Response
from pydantic import ValidationError
from starlette.datastructures import UploadFile

from app import __version__
from app.agent.desktop_client import DesktopClient
from app.agent.events import EventHub
from app.agent.models import FINISHED, Role, TaskStatus
from app.agent.queue import Executor, Worker, load_executor
from app.agent.schemas import (
    ErrorOut,
    FileIn,
    Health,
    MessageCreate,
    MessageOut,
    ModelOut,
    TaskCreate,
    TaskDetail,
    TaskOut,
    TaskPatch,
    message_json,
    task_detail_json,
    task_json,
)
from app.agent.store import NewFile, Store
from app.config import AgentSettings
from app.errors import BadRequest, InvalidTransition, PayloadTooLarge, install_agent_handlers


@dataclass
class Agent:
    settings: AgentSettings
    store: Store
    hub: EventHub
    desktop: DesktopClient
    worker: Worker | None
    executor: Executor


def _json(data: Any, status: int = 200, headers: dict[str, str] | None = None) -> Response:
    return Response(orjson.dumps(data), status_code=status, media_type="application/json", headers=headers)


def _agent(request: Request) -> Agent:
    return request.app.state.agent


_ONE_STATUS = "|".join(TaskStatus)
STATUSES_PATTERN = rf"^({_ONE_STATUS})(,({_ONE_STATUS}))*$"
ERRORS: dict[int | str, dict[str, Any]] = {400: {"model": ErrorOut}, 404: {"model": ErrorOut}}
TASK_ID_ERRORS: dict[int | str, dict[str, Any]] = {404: {"model": ErrorOut, "description": "unknown task id"}}

MULTIPART_SCHEMA = {
    "type": "object",
    "required": ["description"],
    "properties": {
        "description": {"type": "string", "minLength": 1},
        "priority": {"type": "string", "enum": ["LOW", "MEDIUM", "HIGH", "URGENT"]},
        "type": {"type": "string", "enum": ["IMMEDIATE", "SCHEDULED"]},
        "scheduledFor": {"type": "string", "anyOf": [{"format": "date-time"}, {"maxLength": 0}]},
        "model": {"type": "string"},
        "files": {"type": "array", "items": {"type": "string", "format": "binary"}},
    },
}


def _builtin_executor(settings: AgentSettings) -> Executor:
    """AGENT_EXECUTOR when set, else the agent loop (app.agent.runner; imports LiteLLM, ~3 s)."""
    if settings.executor:
        return load_executor(settings.executor)
    from app.agent.runner import AgentExecutor

    return AgentExecutor(settings)


def create_app(
    settings: AgentSettings | None = None,
    *,
    executor: Executor | None = None,
    desktop: DesktopClient | None = None,
) -> FastAPI:
    settings = settings or AgentSettings()

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        store = await Store.open(settings.database_url, desktop_files_dir=settings.desktop_files_dir)
        hub = EventHub()
        store.subscribe(hub.publish)
        client = desktop or DesktopClient(settings.desktop_url, settings.desktop_timeout)
        worker = None
        run = executor or _builtin_executor(settings)
        if settings.worker_enabled:
            worker = Worker(
                store,
                run,
                client,
                worker_id=settings.worker_id or None,
                lease_seconds=settings.lease_seconds,
                poll_seconds=settings.poll_seconds,
            )
            await worker.start()
        app.state.agent = Agent(settings, store, hub, client, worker, run)
        try:
            yield
        finally:
            if worker is not None:
                await worker.stop()
            if desktop is None:
                await client.aclose()
            await store.close()

    app = FastAPI(title="Deskpilot agent", version=__version__, lifespan=lifespan)
    install_agent_handlers(app)
    app.add_middleware(
        CORSMiddleware,
        allow_origins=["*"],
        allow_methods=["*"],
        allow_headers=["*"],
        expose_headers=["X-Total-Count"],
    )

    @app.get("/health", response_model=Health)
    async def health(request: Request) -> Response:
        a = _agent(request)
        return _json(
            {
                "status": "ok",
                "version": __version__,
                "database": a.store.db.backend,
                "worker": a.worker is not None,
            }
        )

    # -- tasks

    @app.post(
        "/tasks",
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
    async def create_task(request: Request) -> Response:
        """Create a PENDING task from JSON (files as base64) or multipart/form-data (`files` parts)."""
        a = _agent(request)
        s = a.settings
        length = request.headers.get("content-length")
        if length and length.isdigit() and int(length) > s.max_upload_bytes * 4 // 3 + 1024 * 1024:
            raise PayloadTooLarge(f"request body: larger than the upload limit of {s.max_upload_bytes} bytes")
        ctype = request.headers.get("content-type", "").split(";")[0].strip().lower()
        if ctype == "multipart/form-data":
            body, files = await _parse_multipart(request, s)
        elif ctype in ("application/json", ""):
            body, files = await _parse_json(request, s)
        else:
            raise BadRequest("Content-Type: must be application/json or multipart/form-data")
        task = await a.store.create_task(
            body.description,
            priority=body.priority,
            type=body.type,
            scheduled_for=body.scheduled_for,
            model=body.model,
            created_by=body.created_by,
            files=files,
        )
        return _json(task_json(task), 201)

    @app.get("/tasks", response_model=list[TaskOut], responses=ERRORS)
    async def list_tasks(
        request: Request,
        status: Annotated[TaskStatus | None, Query(description="only tasks in this status")] = None,
        statuses: Annotated[
            list[str] | None,
            Query(
                description="several statuses, comma-separated or repeated",
                json_schema_extra={"items": {"type": "string", "pattern": STATUSES_PATTERN}},
            ),
        ] = None,
        limit: Annotated[int, Query(ge=1, le=1000)] = 100,
        offset: Annotated[int, Query(ge=0, le=1_000_000_000)] = 0,
    ) -> Response:
        """Tasks newest first; `X-Total-Count` is the number matching the filter."""
        wanted: set[str] = {status} if status else set()
        for item in statuses or []:
            # the documented pattern, so an empty or malformed list is refused rather than ignored
            if not re.fullmatch(STATUSES_PATTERN, item):
                bad = next((v for v in item.split(",") if v not in TaskStatus.__members__), item)
                raise BadRequest(f"statuses: unknown status {bad!r}; one of {', '.join(TaskStatus)}")
            wanted.update(item.split(","))
        tasks, total = await _agent(request).store.list_tasks(wanted or None, limit, offset)
        return _json([task_json(t) for t in tasks], headers={"X-Total-Count": str(total)})

    @app.get("/tasks/in-progress", response_model=TaskOut | None)
    async def in_progress(request: Request) -> Response:
        """The task IN_PROGRESS (this agent's own first), or `null`."""
        a = _agent(request)
        task = await a.store.in_progress(a.worker.worker_id if a.worker else None)
        return _json(task_json(task) if task else None)

    @app.get("/tasks/models", response_model=list[ModelOut])
    async def models(request: Request) -> Response:
        """Models the agent can use: the executor's optional ``async def models()`` (empty without one)."""
        listing = getattr(_agent(request).executor, "models", None)
        return _json(await listing() if listing is not None else [])

    @app.get("/tasks/{task_id}", response_model=TaskDetail, responses=TASK_ID_ERRORS)
    async def get_task(request: Request, task_id: str) -> Response:
        task, messages, files = await _agent(request).store.get_task_detail(task_id)
        return _json(task_detail_json(task, messages, files))

    @app.patch("/tasks/{task_id}", response_model=TaskOut, responses=ERRORS)
    async def patch_task(request: Request, task_id: str, body: TaskPatch) -> Response:
        """Change `status` (DESIGN.md §3 moves only), `priority`, or `description` while PENDING."""
        a = _agent(request)
        task = await a.store.update_task(
            task_id, status=body.status, priority=body.priority, description=body.description
        )
        if a.worker is not None and task.status != TaskStatus.IN_PROGRESS:
            await a.worker.cancel_task(task_id)  # a human moved the running task: the agent stops
        return _json(task_json(task))

    @app.delete("/tasks/{task_id}", status_code=204, responses=TASK_ID_ERRORS)
    async def delete_task(request: Request, task_id: str) -> Response:
        """Delete the task with its messages and files; a running task is cancelled first."""
        a = _agent(request)
        if a.worker is not None and a.worker.current_task_id == task_id:
            with contextlib.suppress(InvalidTransition):  # it may have just finished by itself
                await a.store.update_task(task_id, status=TaskStatus.CANCELLED)
            await a.worker.cancel_task(task_id)
        await a.store.delete_task(task_id)
        return Response(status_code=204)

    @app.post("/tasks/{task_id}/messages", status_code=201, response_model=MessageOut, responses=ERRORS)
    async def add_message(request: Request, task_id: str, body: MessageCreate) -> Response:
        """A USER message; on a NEEDS_HELP, NEEDS_REVIEW, COMPLETED or FAILED task it re-queues the task."""
        msg = await _agent(request).store.add_message(task_id, body.blocks(), Role.USER)
        return _json(message_json(msg), 201)

    @app.get("/tasks/{task_id}/messages", response_model=list[MessageOut], responses=ERRORS)
    async def list_messages(
        request: Request,
        task_id: str,
        limit: Annotated[int, Query(ge=1, le=1000)] = 100,
        offset: Annotated[int, Query(ge=0, le=1_000_000_000)] = 0,
    ) -> Response:
        """Messages oldest first; `X-Total-Count` is the task's message count."""
        messages, total = await _agent(request).store.list_messages(task_id, limit, offset)
        return _json([message_json(m) for m in messages], headers={"X-Total-Count": str(total)})

    @app.post("/tasks/{task_id}/takeover", response_model=TaskOut, responses=ERRORS)
    async def takeover(request: Request, task_id: str) -> Response:
        """A human takes control of the desktop: the agent takes no action until /resume."""
        store = _agent(request).store
        task = await store.get_task(task_id)
        if task.status in FINISHED:
            raise BadRequest(f"takeover: task is {task.status}; nothing to take over")
        return _json(task_json(await store.update_task(task_id, control=Role.USER)))

    @app.post("/tasks/{task_id}/resume", response_model=TaskOut, responses=TASK_ID_ERRORS)
    async def resume(request: Request, task_id: str) -> Response:
        """Control goes back to the agent."""
        return _json(task_json(await _agent(request).store.update_task(task_id, control=Role.ASSISTANT)))

    @app.websocket("/ws")
    async def ws(websocket: WebSocket) -> None:
        await websocket.app.state.agent.hub.serve(websocket)

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            schema = get_openapi(title=app.title, version=app.version, routes=app.routes, description=__doc__)
            extra = TaskCreate.model_json_schema(by_alias=True, ref_template="#/components/schemas/{model}")
            components = schema.setdefault("components", {}).setdefault("schemas", {})
            components.update(extra.pop("$defs", {}))
            components["TaskCreate"] = extra
            app.openapi_schema = schema
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]
    return app


# ------------------------------------------------------------------------------------------ request bodies


def _validate_create(data: Any) -> TaskCreate:
    if not isinstance(data, dict):
        raise BadRequest("body: must be a JSON object")
    try:
        return TaskCreate.model_validate(data)
    except ValidationError as e:
        raise RequestValidationError([{**err, "loc": ("body", *err["loc"])} for err in e.errors()]) from e


def _check_sizes(files: list[NewFile], s: AgentSettings) -> None:
    if len(files) > s.max_files:
        raise BadRequest(f"files: at most {s.max_files} files per task, got {len(files)}")
    for f in files:
        if len(f.data) > s.max_file_bytes:
            raise PayloadTooLarge(f"files: {f.name} is {len(f.data)} bytes; the limit is {s.max_file_bytes}")
    total = sum(len(f.data) for f in files)
    if total > s.max_upload_bytes:
        raise PayloadTooLarge(f"files: {total} bytes in all; the limit is {s.max_upload_bytes}")


async def _parse_json(request: Request, s: AgentSettings) -> tuple[TaskCreate, list[NewFile]]:
    raw = await request.body()
    try:
        data = orjson.loads(raw)
    except orjson.JSONDecodeError as e:
        raise BadRequest(f"body: invalid JSON ({e})") from e
    body = _validate_create(data)
    files = [_decode_file(i, f) for i, f in enumerate(body.files)]
    _check_sizes(files, s)
    return body, files


def _decode_file(i: int, f: FileIn) -> NewFile:
    encoded = f.data if f.data is not None else f.base64
    if encoded is None:
        raise BadRequest(f"files[{i}].data: required (base64 of the content)")
    if "," in encoded[:100] and encoded.startswith("data:"):
        encoded = encoded.split(",", 1)[1]  # a data: URL as browsers produce it
    try:
        data = pybase64.b64decode(encoded, validate=True)
    except ValueError as e:
        raise BadRequest(f"files[{i}].data: not valid base64") from e
    return NewFile(f.name, data, f.type)


async def _parse_multipart(request: Request, s: AgentSettings) -> tuple[TaskCreate, list[NewFile]]:
    form = await request.form(max_files=s.max_files, max_fields=100, max_part_size=1024 * 1024)
    try:
        data: dict[str, Any] = {}
        files: list[NewFile] = []
        for key, value in form.multi_items():
            if isinstance(value, UploadFile):
                if key != "files":
                    raise BadRequest(f"{key}: file parts must be named 'files'")
                if value.size is not None and value.size > s.max_file_bytes:
                    raise PayloadTooLarge(
                        f"files: {value.filename} is {value.size} bytes; the limit is {s.max_file_bytes}"
                    )
                files.append(NewFile(value.filename or "file", await value.read(), value.content_type))
                _check_sizes(files, s)
            elif key in ("description", "priority", "type", "scheduledFor", "model", "createdBy"):
                data[key] = value
            elif key == "files" and value == "":
                continue  # an empty file input of an HTML form
        if data.get("scheduledFor") == "":
            data.pop("scheduledFor")
        body = _validate_create(data)
        _check_sizes(files, s)
        return body, files
    finally:
        await form.close()


__all__ = ["create_app"]
