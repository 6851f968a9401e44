"""The web UI server (port 9992)."""

from __future__ import annotations

from fastapi import FastAPI

from app import __version__


def create_app() -> FastAPI:
    app = FastAPI(title="Deskpilot UI", version=__version__)

    @app.get("/health")
    def health() -> dict:
        return {"status": "ok", "version": __version__}

    return app
