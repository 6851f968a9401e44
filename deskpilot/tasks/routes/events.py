"""``/ws``: live task events (see ``deskpilot.tasks.events`` for the frames and subscriptions)."""

from __future__ import annotations

from fastapi import APIRouter, WebSocket

from deskpilot.tasks.deps import Service

router = APIRouter()


@router.websocket("/ws")
async def events(websocket: WebSocket, service: Service) -> None:
    await service.hub.serve(websocket)
