"""``/health``: for probes, the status to anyone; with the token also the version, the database backend,
whether this process runs a worker and, when degraded (503), what is wrong: ``storage`` while writes fail for
lack of disk space (``deskpilot.tasks.storage``)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from starlette.responses import Response

from deskpilot import __version__
from deskpilot.security import authorized
from deskpilot.taskapi.types import Health
from deskpilot.tasks.deps import Service
from deskpilot.web import json_response

router = APIRouter()


@router.get(
    "/health",
    response_model=Health,
    responses={503: {"model": Health, "description": "degraded: `problems` says why (with the token)"}},
)
async def health(service: Service, request: Request) -> Response:
    # each probe: None when fine, else what is wrong
    probes = {"storage": service.store.db.space.problem()}
    problems = {name: problem for name, problem in probes.items() if problem}
    body: dict[str, Any] = {"status": "degraded" if problems else "ok"}
    if authorized(request.scope):  # the details: for the token's holders only
        body |= {
            "version": __version__,
            "database": service.store.db.backend,
            "worker": service.worker is not None,
        }
        if problems:
            body["problems"] = problems
    return json_response(body, 503 if problems else 200)
