"""HTML fragments (and a task's state as JSON) the pages' scripts fetch on live events, so every piece of
HTML has one template. An agent that is down or refuses comes back as the agent's own error body, which
the scripts show."""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, JSONResponse, Response

from deskpilot.client.calls import TaskClientError
from deskpilot.errors import task_error_body
from deskpilot.ui.deps import Directory, Settings, Tasks
from deskpilot.ui.render import fleet, render, task_list, task_state
from deskpilot.ui.steps import steps_view
from deskpilot.ui.task_service import problem, status_of, wire

router = APIRouter(prefix="/fragments")


@router.get("/tasks", response_class=HTMLResponse)
async def task_rows(
    request: Request, tasks: Tasks, settings: Settings, filter: str = "all", offset: int = 0
) -> HTMLResponse:
    context = await task_list(tasks, filter, max(offset, 0), settings.page_size)
    return render(request, "_task_rows.html", context, 502 if context["error"] else 200)


@router.get("/tasks/{task_id}/messages", response_class=HTMLResponse)
async def message_items(request: Request, task_id: str, tasks: Tasks, offset: int = 0) -> HTMLResponse:
    messages = await tasks.messages_from(task_id, max(offset, 0))
    return render(request, "_messages.html", {"messages": [wire(m) for m in messages]})


@router.get("/tasks/{task_id}/steps", response_class=HTMLResponse)
async def step_items(request: Request, task_id: str, tasks: Tasks) -> HTMLResponse:
    """The task's trajectory step by step: actor, action, outcome, the frames before and after."""
    return render(request, "_steps.html", steps_view(await tasks.archive(task_id)))


@router.get("/tasks/{task_id}/state")
async def task_state_json(task_id: str, tasks: Tasks) -> JSONResponse:
    return JSONResponse(task_state(wire(await tasks.get(task_id))))


@router.get("/desktops", response_class=HTMLResponse)
async def desktop_rows(request: Request, tasks: Tasks, directory: Directory) -> HTMLResponse:
    context = await fleet(tasks, directory)
    return render(request, "_desktop_rows.html", context, 502 if context["error"] else 200)


async def task_service_failed(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, TaskClientError)
    return JSONResponse(task_error_body(status_of(exc), problem(exc)), status_of(exc))


ERROR_HANDLERS: dict[int | type[Exception], Callable[[Request, Any], Coroutine[Any, Any, Response]]] = {
    TaskClientError: task_service_failed,
}
