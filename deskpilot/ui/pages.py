"""The UI's pages, rendered on the server from the agent's API so the first paint needs no JavaScript."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, RedirectResponse

from deskpilot import __version__
from deskpilot.security import authorized
from deskpilot.taskapi.types import TaskStatus
from deskpilot.ui.agent import AgentFailed, AgentUnavailable
from deskpilot.ui.deps import Agent, Directory, Settings
from deskpilot.ui.render import fleet, models_state, render, task_list, task_state

router = APIRouter()


@router.get("/health")
def health(request: Request) -> dict[str, str]:
    """The status to anyone; the version with a session or the token."""
    return {"status": "ok", **({"version": __version__} if authorized(request.scope) else {})}


@router.get("/", response_class=HTMLResponse)
async def index(
    request: Request, agent: Agent, settings: Settings, filter: str = "all", offset: int = 0
) -> HTMLResponse:
    context = await task_list(agent, filter, max(offset, 0), settings.page_size)
    context.update(await models_state(agent))
    return render(request, "index.html", context)


@router.get("/tasks", include_in_schema=False)
def tasks_alias() -> RedirectResponse:
    return RedirectResponse("/", status_code=307)


@router.get("/tasks/new", response_class=HTMLResponse)
async def new_task(request: Request, agent: Agent) -> HTMLResponse:
    return render(request, "new.html", await models_state(agent))


@router.get("/tasks/{task_id}", response_class=HTMLResponse)
async def task_detail(request: Request, task_id: str, agent: Agent) -> HTMLResponse:
    try:
        task = await agent.get_task(task_id)
    except AgentUnavailable as exc:
        return render(request, "task.html", {"task": None, "task_id": task_id, "error": str(exc)}, 502)
    except AgentFailed as exc:
        return render(
            request, "task.html", {"task": None, "task_id": task_id, "error": exc.message}, exc.status
        )
    context = {"task": task, "task_id": task_id, "error": None, "task_state": task_state(task)}
    if task.get("status") == TaskStatus.PENDING:  # say why it may not start
        context.update(await models_state(agent))
    return render(request, "task.html", context)


@router.get("/desktops", response_class=HTMLResponse)
async def desktops(request: Request, agent: Agent, directory: Directory) -> HTMLResponse:
    """The fleet: every desktop with its state and task, and a way to watch it."""
    context = await fleet(agent, directory)
    return render(request, "desktops.html", context, 502 if context["error"] else 200)


@router.get("/desktops/{name}", response_class=HTMLResponse)
async def desktop(request: Request, name: str, agent: Agent, directory: Directory) -> HTMLResponse:
    """One desktop's live view, with take-over (it claims no new task) and hand-back."""
    context = await fleet(agent, directory)
    found = [d for d in context["desktops"] if d["name"] == name]
    context.update(name=name, desktop=found[0] if found else None)
    status = 502 if context["error"] else 200 if found else 404
    return render(request, "desktop.html", context, status)
