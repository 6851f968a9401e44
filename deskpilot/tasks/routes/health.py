"""``/health``: for probes; names the database backend and whether this process runs a worker."""

from __future__ import annotations

from fastapi import APIRouter
from starlette.responses import Response

from deskpilot import __version__
from deskpilot.tasks.deps import Service
from deskpilot.tasks.schemas import Health
from deskpilot.web import json_response

router = APIRouter()


@router.get("/health", response_model=Health)
async def health(service: Service) -> Response:
    return json_response(
        {
            "status": "ok",
            "version": __version__,
            "database": service.store.db.backend,
            "worker": service.worker is not None,
        }
    )
