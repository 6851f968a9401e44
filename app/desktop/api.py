"""The desktop service's HTTP routes."""

from __future__ import annotations

from fastapi import FastAPI

from app import __version__
from app.desktop import vnc


def create_app() -> FastAPI:
    app = FastAPI(title="Deskpilot desktop", version=__version__)

    @app.get("/health")
    def health() -> dict:
        return {"status": "ok", "version": __version__}

    vnc.install(app)  # /vnc live view; keep it after the other routes
    return app
