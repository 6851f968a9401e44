"""The UI's pages, rendered on the server from the task API so the first paint needs no JavaScript."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, RedirectResponse

from deskpilot import __version__
from deskpilot.client.calls import TaskClientError
from deskpilot.security import authorized
from deskpilot.taskapi.types import TaskStatus
from deskpilot.ui.deps import Directory, Settings, Tasks
from deskpilot.ui.render import fleet, models_state, render, task_list, task_state
from deskpilot.ui.task_service import problem, status_of, wire

router = APIRouter()


@router.get("/health")
def health(request: Request) -> dict[str, str]:
    """The status to anyone; the version with a session or the token."""
    return {"status": "ok", **({"version": __version__} if authorized(request.scope) else {})}


@router.get("/", response_class=HTMLResponse)
async def index(
    request: Request, tasks: Tasks, settings: Settings, filter: str = "all", offset: int = 0
) -> HTMLResponse:
    context = await task_list(tasks, filter, max(offset, 0), settings.page_size)
    context.update(await models_state(tasks))
    return render(request, "index.html", context)


@router.get("/tasks", include_in_schema=False)
def tasks_alias() -> RedirectResponse:
    return RedirectResponse("/", status_code=307)


@router.get("/tasks/new", response_class=HTMLResponse)
async def new_task(request: Request, tasks: Tasks) -> HTMLResponse:
    return render(request, "new.html", await models_state(tasks))


@router.get("/tasks/{task_id}", response_class=HTMLResponse)
async def task_detail(request: Request, task_id: str, tasks: Tasks) -> HTMLResponse:
    try:
        task = wire(await tasks.get(task_id))
    except TaskClientError as exc:
        failed = {"task": None, "task_id": task_id, "error": problem(exc)}
        return render(request, "task.html", failed, status_of(exc))
    context: dict[str, Any] = {
        "task": task,
        "task_id": task_id,
        "error": None,
        "task_state": task_state(task),
    }
    if task["status"] == TaskStatus.PENDING:  # say why it may not start
        context.update(await models_state(tasks))
    return render(request, "task.html", context)


@router.get("/desktops", response_class=HTMLResponse)
async def desktops(request: Request, tasks: Tasks, directory: Directory) -> HTMLResponse:
    """The fleet: every desktop with its state and task, and a way to watch it."""
    context = await fleet(tasks, directory)
    return render(request, "desktops.html", context, 502 if context["error"] else 200)


@router.get("/desktops/{name}", response_class=HTMLResponse)
async def desktop(request: Request, name: str, tasks: Tasks, directory: Directory) -> HTMLResponse:
    """One desktop's live view, with take-over (it claims no new task) and hand-back."""
    context = await fleet(tasks, directory)
    found = [d for d in context["desktops"] if d["name"] == name]
    context.update(name=name, desktop=found[0] if found else None)
    status = 502 if context["error"] else 200 if found else 404
    return render(request, "desktop.html", context, status)
