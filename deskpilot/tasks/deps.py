"""Dependencies of the task service's routes: ``Service`` is the ``TaskService`` of the running app."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends
from starlette.requests import HTTPConnection

from deskpilot.tasks.service import TaskService


def get_service(conn: HTTPConnection) -> TaskService:
    service: TaskService = conn.app.state.tasks
    return service


Service = Annotated[TaskService, Depends(get_service)]
