"""What pages and fragments share: the templates, and the data they are rendered from (the task list,
the model picker, a task's state with its result as text)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from fastapi import Request
from fastapi.responses import HTMLResponse
from fastapi.templating import Jinja2Templates

from deskpilot import __version__
from deskpilot.client.agent import AsyncAgent
from deskpilot.client.calls import TaskClientError
from deskpilot.config import PROVIDERS, PROXY_VAR
from deskpilot.taskapi.types import FINISHED, TaskPriority, TaskStatus
from deskpilot.ui.conversation import render_message
from deskpilot.ui.fleet import DesktopDirectory, live_view_base
from deskpilot.ui.task_service import FILTERS, problem, statuses_for, wire

STATUS_LABELS: dict[str, str] = {
    TaskStatus.PENDING: "Queued",
    TaskStatus.IN_PROGRESS: "Running",
    TaskStatus.NEEDS_HELP: "Needs help",
    TaskStatus.NEEDS_REVIEW: "Needs review",
    TaskStatus.COMPLETED: "Completed",
    TaskStatus.CANCELLED: "Cancelled",
    TaskStatus.FAILED: "Failed",
}
# The statuses as the page's scripts read them (base.html renders them as JSON, common.js parses it), so
# the JavaScript writes none of its own: each by name, the finished ones, their labels.
STATUSES: dict[str, Any] = {
    "each": {status.name: status.value for status in TaskStatus},
    "finished": sorted(FINISHED),
    "labels": STATUS_LABELS,
}


def result_text(result: Any) -> str:
    """A task's result as a person reads it: the agent's description (``{"description": ...}``, what the
    agent loop stores), a string as is, other shapes as ``key: value`` lines or ``- item`` lines."""
    if result is None:
        return ""
    if isinstance(result, str):
        return result
    if isinstance(result, dict):
        lines = [str(result["description"])] if "description" in result else []
        lines += [f"{key}: {_inline(value)}" for key, value in result.items() if key != "description"]
        return "\n".join(lines)
    if isinstance(result, list):
        return "\n".join(f"- {_inline(item)}" for item in result)
    return str(result)


def _inline(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def _login_state(request: Request) -> dict[str, Any]:
    """Whether pages offer "Log out": the app's own setting (several apps may share these templates)."""
    return {"login_required": request.app.state.credentials.required}


def _templates() -> Jinja2Templates:
    templates = Jinja2Templates(
        directory=Path(__file__).parent / "templates", context_processors=[_login_state]
    )
    env = templates.env
    env.globals.update(
        statuses=STATUSES,
        TaskStatus=TaskStatus,
        priorities=[p.value for p in TaskPriority],
        providers=PROVIDERS,
        proxy_var=PROXY_VAR,
        filters=FILTERS,
        finished=sorted(FINISHED),
        version=__version__,
    )
    env.filters["status_label"] = lambda status: STATUS_LABELS.get(
        status, str(status).replace("_", " ").title()
    )
    env.filters["title_case"] = lambda value: str(value or "").replace("_", " ").title()
    env.filters["render_message"] = render_message
    env.filters["result_text"] = result_text
    env.filters["live_view"] = live_view_base
    return templates


TEMPLATES = _templates()


def render(request: Request, name: str, context: dict[str, Any], status_code: int = 200) -> HTMLResponse:
    return TEMPLATES.TemplateResponse(request, name, context, status_code=status_code)


def task_state(task: dict[str, Any]) -> dict[str, Any]:
    """What a task page follows: the task without its messages and files (a page catching up needs the
    status, not every screenshot), with ``resultText``, the result as shown."""
    state = {k: v for k, v in task.items() if k not in ("messages", "files")}
    state["resultText"] = result_text(task.get("result"))
    return state


async def models_state(tasks: AsyncAgent) -> dict[str, Any]:
    """The model picker's options, or why there are none."""
    try:
        return {"models": [wire(m) for m in await tasks.models()], "models_error": None}
    except TaskClientError as exc:
        return {"models": None, "models_error": problem(exc)}


async def fleet(tasks: AsyncAgent, directory: DesktopDirectory) -> dict[str, Any]:
    """The fleet page's desktops (and the proxy learns their URLs on the way), or the task service's error."""
    try:
        desktops = await tasks.desktops()
    except TaskClientError as exc:
        return {"desktops": [], "error": problem(exc)}
    directory.known(desktops)
    return {"desktops": [wire(d) for d in desktops], "error": None}


async def task_list(tasks: AsyncAgent, filter_key: str, offset: int, limit: int) -> dict[str, Any]:
    """One page of the task list with the filter's statuses, or the task service's error."""
    context: dict[str, Any] = {
        "filter": filter_key,
        "offset": offset,
        "limit": limit,
        "tasks": [],
        "total": 0,
    }
    try:
        page = await tasks.page(statuses_for(filter_key) or None, limit=limit, offset=offset)
    except TaskClientError as exc:
        return {**context, "error": problem(exc)}
    return {**context, "tasks": [wire(t) for t in page.tasks], "total": page.total, "error": None}
