"""The task service over real HTTP for a test or a benchmark: its settings, served in a thread, and a second
connection to its database."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import httpx
from fastapi import FastAPI

from deskpilot.config import SecuritySettings, TaskSettings
from deskpilot.tasks.app import create_app
from deskpilot.tasks.executor import Executor
from deskpilot.tasks.store import Store
from testbed.net import ServerThread, free_port
from testbed.security import security as open_security

# Where uploads would be saved: no desktop service runs for these tests (a test with one passes a private
# directory of its own), and nothing can create this path, so no test ever writes into the real ~/Desktop.
NO_DESKTOP_FILES_DIR = "/nonexistent/deskpilot-tests/Desktop"


def settings_for(db_url: str, **overrides) -> TaskSettings:
    """Test settings: a desktop URL nothing listens on unless overridden, short leases, no polling."""
    base = {
        "database_url": db_url,
        "worker_enabled": False,
        "desktop_url": f"http://127.0.0.1:{free_port()}",
        "lease_seconds": 2.0,
        "poll_seconds": 30.0,
        "desktop_files_dir": NO_DESKTOP_FILES_DIR,
    }
    return TaskSettings(**{**base, **overrides})


class TaskApi(httpx.Client):
    """A client of the task service that ``serve`` started, with its app and its WebSocket's URL."""

    app: FastAPI
    ws_url: str


@contextmanager
def serve(
    db_url: str,
    executor: Executor | None = None,
    security: SecuritySettings | None = None,
    **overrides,
) -> Iterator[TaskApi]:
    """The task service over real HTTP; open (no token, loopback hosts) unless ``security`` says otherwise."""
    app = create_app(
        settings_for(db_url, **overrides), executor=executor, security=security or open_security()
    )
    with ServerThread(app) as server, TaskApi(base_url=server.url, timeout=30) as client:
        client.app = app
        client.ws_url = server.url.replace("http://", "ws://") + "/ws"
        yield client


def run(coro):
    return asyncio.run(coro)


def with_store(db_url: str, fn: Callable):
    """Run ``await fn(store)`` on a second connection to the same database (what another process sees)."""

    async def go():
        store = await Store.open(db_url, migrate=False)
        try:
            return await fn(store)
        finally:
            await store.close()

    return run(go())


def listening(client: TaskApi) -> None:
    """Once the service listens for the other services' changes (PostgreSQL's LISTEN)."""
    deadline = time.monotonic() + 10
    while not client.app.state.fanout.listening.is_set():
        assert time.monotonic() < deadline, "the fan-out never listened"
        time.sleep(0.02)
