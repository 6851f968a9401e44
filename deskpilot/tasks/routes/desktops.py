"""``/desktops``: the fleet's desktops and their state; a human takes one over (it claims no new task)."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Path
from starlette.responses import Response

from deskpilot.taskapi.types import DESKTOP_NAME_PATTERN, DesktopOut, ErrorOut
from deskpilot.tasks.deps import Service
from deskpilot.web import json_response

router = APIRouter(prefix="/desktops", tags=["desktops"])

Name = Annotated[str, Path(pattern=DESKTOP_NAME_PATTERN, description="the desktop's name")]
ERRORS: dict[int | str, dict[str, Any]] = {
    400: {"model": ErrorOut},
    404: {"model": ErrorOut, "description": "unknown desktop"},
}


@router.get("", response_model=list[DesktopOut])
async def list_desktops(service: Service) -> Response:
    """Every desktop of the fleet by name: idle, running a task, taken over by a human, or unhealthy."""
    return json_response(await service.registry.listing())


@router.post("/{name}/takeover", response_model=DesktopOut, responses=ERRORS)
async def take_over(name: Name, service: Service) -> Response:
    """A human uses the desktop: its worker claims no new task until /resume (a running one goes on)."""
    return json_response(await service.registry.take_over(name, True))


@router.post("/{name}/resume", response_model=DesktopOut, responses=ERRORS)
async def resume(name: Name, service: Service) -> Response:
    """The desktop takes tasks again."""
    return json_response(await service.registry.take_over(name, False))
