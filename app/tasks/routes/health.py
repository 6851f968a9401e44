"""``/health``: for probes; names the database backend and whether this process runs a worker."""

from __future__ import annotations

from fastapi import APIRouter
from starlette.responses import Response

from app import __version__
from app.tasks.deps import Service
from app.tasks.schemas import Health
from app.web import json_response

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
