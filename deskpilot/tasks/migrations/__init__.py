"""Alembic migrations of the agent database, applied programmatically when the service starts.

Command line (for writing new revisions):
    DATABASE_URL=sqlite:///tmp/x.db .venv/bin/python -m deskpilot.tasks.migrations \
        revision --autogenerate -m "..."
"""

from __future__ import annotations

from pathlib import Path

from alembic import command
from alembic.config import Config
from sqlalchemy.engine import Connection

HERE = Path(__file__).resolve().parent


def alembic_config(url: str | None = None) -> Config:
    cfg = Config()
    cfg.set_main_option("script_location", str(HERE))
    if url:
        cfg.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    return cfg


def upgrade_to_head(connection: Connection) -> None:
    """Run inside ``AsyncConnection.run_sync``: env.py uses the given connection and its transaction."""
    cfg = alembic_config()
    cfg.attributes["connection"] = connection
    command.upgrade(cfg, "head")
