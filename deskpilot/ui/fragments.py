"""HTML fragments (and a task's state as JSON) the pages' scripts fetch on live events, so every piece of
HTML has one template. An agent that is down or refuses comes back as the agent's own error body, which
the scripts show."""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, JSONResponse, Response

from deskpilot.errors import agent_error_body
from deskpilot.ui.agent import AgentFailed, AgentUnavailable
from deskpilot.ui.deps import Agent, Directory, Settings
from deskpilot.ui.render import fleet, render, task_list, task_state
from deskpilot.ui.steps import steps_view

router = APIRouter(prefix="/fragments")


@router.get("/tasks", response_class=HTMLResponse)
async def task_rows(
    request: Request, agent: Agent, settings: Settings, filter: str = "all", offset: int = 0
) -> HTMLResponse:
    context = await task_list(agent, filter, max(offset, 0), settings.page_size)
    return render(request, "_task_rows.html", context, 502 if context["error"] else 200)


@router.get("/tasks/{task_id}/messages", response_class=HTMLResponse)
async def message_items(request: Request, task_id: str, agent: Agent, offset: int = 0) -> HTMLResponse:
    messages = await agent.messages(task_id, max(offset, 0))
    return render(request, "_messages.html", {"messages": messages})


@router.get("/tasks/{task_id}/steps", response_class=HTMLResponse)
async def step_items(request: Request, task_id: str, agent: Agent) -> HTMLResponse:
    """The task's trajectory step by step: actor, action, outcome, the frames before and after."""
    return render(request, "_steps.html", steps_view(await agent.trajectory(task_id)))


@router.get("/tasks/{task_id}/state")
async def task_state_json(task_id: str, agent: Agent) -> JSONResponse:
    return JSONResponse(task_state(await agent.get_task(task_id)))


@router.get("/desktops", response_class=HTMLResponse)
async def desktop_rows(request: Request, agent: Agent, directory: Directory) -> HTMLResponse:
    context = await fleet(agent, directory)
    return render(request, "_desktop_rows.html", context, 502 if context["error"] else 200)


async def agent_unavailable(request: Request, exc: Exception) -> JSONResponse:
    return JSONResponse(agent_error_body(502, str(exc)), 502)


async def agent_failed(request: Request, exc: Exception) -> JSONResponse:
    status = exc.status if isinstance(exc, AgentFailed) else 502
    return JSONResponse(agent_error_body(status, str(exc)), status)


ERROR_HANDLERS: dict[int | type[Exception], Callable[[Request, Any], Coroutine[Any, Any, Response]]] = {
    AgentUnavailable: agent_unavailable,
    AgentFailed: agent_failed,
}
