"""Engines for the agent database: URL normalisation, SQLite pragmas and its single writer, migrations.

SQLite allows one writer at a time. Writes therefore go through a dedicated engine with one pooled
connection whose transactions start with ``BEGIN IMMEDIATE`` (the write lock is taken up front, so a
transaction never fails half-way upgrading a read lock); reads use a second engine and run concurrently
under WAL. On PostgreSQL both roles share one engine.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import asyncpg
from sqlalchemy import event, text
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine

from deskpilot.tasks.migrations import upgrade_to_head
from deskpilot.tasks.storage import Space


def async_url(url: str) -> str:
    """Give plain URLs their async driver: postgresql:// -> asyncpg, sqlite:// -> aiosqlite."""
    parsed = make_url(url)
    if parsed.drivername in ("postgresql", "postgres", "postgresql+psycopg", "postgresql+psycopg2"):
        parsed = parsed.set(drivername="postgresql+asyncpg")
    elif parsed.drivername in ("sqlite", "sqlite+pysqlite"):
        parsed = parsed.set(drivername="sqlite+aiosqlite")
    return parsed.render_as_string(hide_password=False)


def is_sqlite(url: str) -> bool:
    return make_url(url).get_backend_name() == "sqlite"


def _sqlite_engine(url: str, begin: str, **kw: Any) -> AsyncEngine:
    engine = create_async_engine(url, connect_args={"timeout": 30}, **kw)

    @event.listens_for(engine.sync_engine, "connect")
    def _connect(dbapi_connection: Any, _record: Any) -> None:
        dbapi_connection.isolation_level = None  # we emit BEGIN ourselves
        cur = dbapi_connection.cursor()
        for pragma in ("journal_mode=WAL", "synchronous=NORMAL", "foreign_keys=ON", "busy_timeout=30000"):
            cur.execute(f"PRAGMA {pragma}")
        cur.close()

    @event.listens_for(engine.sync_engine, "begin")
    def _begin(conn: Any) -> None:
        conn.exec_driver_sql(begin)

    return engine


class Database:
    """The engines of one agent database; ``writer`` for transactions that write, ``reader`` for the rest."""

    def __init__(self, url: str) -> None:
        self.url = async_url(url)
        self.sqlite = is_sqlite(self.url)
        self.space = Space()  # whether writes fail for lack of disk space, for /health
        if self.sqlite:
            path = make_url(self.url).database
            if path and path != ":memory:":
                Path(path).parent.mkdir(parents=True, exist_ok=True)
            self.writer = _sqlite_engine(
                self.url, "BEGIN IMMEDIATE", pool_size=1, max_overflow=0, pool_timeout=60
            )
            self.reader = _sqlite_engine(self.url, "BEGIN", pool_size=5, max_overflow=10)
        else:
            self.writer = create_async_engine(self.url, pool_size=10, max_overflow=10, pool_recycle=1800)
            # Reads need no transaction (each statement sees committed data): no BEGIN/COMMIT round trips.
            self.reader = self.writer.execution_options(isolation_level="AUTOCOMMIT")

    @property
    def listen_dsn(self) -> str:
        """The PostgreSQL URL as asyncpg takes it, for LISTEN and NOTIFY outside the pool."""
        return make_url(self.url).set(drivername="postgresql").render_as_string(hide_password=False)

    @property
    def backend(self) -> str:
        return "sqlite" if self.sqlite else "postgresql"

    async def migrate(self) -> None:
        """Apply the Alembic migrations (idempotent). Concurrent starts on PostgreSQL serialise on a lock."""
        async with self.writer.begin() as conn:
            if not self.sqlite:
                await conn.execute(text("SELECT pg_advisory_xact_lock(774411)"))
            await conn.run_sync(upgrade_to_head)

    async def dispose(self) -> None:
        await self.writer.dispose()
        if self.sqlite:
            await self.reader.dispose()


async def keep_connected(
    dsn: str,
    use: Callable[[asyncpg.Connection], Awaitable[None]],
    failed: Callable[[Exception], Awaitable[None]],
) -> None:
    """Run ``use`` on a PostgreSQL connection of its own (LISTEN and NOTIFY stay out of the pool) until it
    returns; when the connection or ``use`` fails, ``failed`` (which logs and waits) and connect again. The
    connection is always closed, also when the task is cancelled."""
    while True:
        conn = None
        try:
            conn = await asyncpg.connect(dsn)
            await use(conn)
            return
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            await failed(exc)
        finally:
            if conn is not None:
                with contextlib.suppress(Exception):
                    await asyncio.shield(conn.close(timeout=2))
