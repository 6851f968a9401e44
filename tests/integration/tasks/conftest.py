"""Fixtures of the agent-service tests: one PostgreSQL server per session, a fresh database per test
(SQLite file or PostgreSQL database), and the agent app served on real HTTP."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from testbed.postgres import PostgresServer
from testbed.task_service import TaskApi, serve


@pytest.fixture(scope="session")
def pg_server() -> Iterator[PostgresServer]:
    server = PostgresServer().start()
    try:
        yield server
    finally:
        server.stop()


BACKENDS = [
    pytest.param("sqlite", id="sqlite"),
    pytest.param("postgres", id="postgres", marks=pytest.mark.postgres),
]


@pytest.fixture(params=BACKENDS)
def db_url(request: pytest.FixtureRequest, tmp_path) -> str:
    """An empty database on each backend."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path}/agent.db"
    return request.getfixturevalue("pg_server").create_database()


@pytest.fixture
def api(db_url: str) -> Iterator[TaskApi]:
    """The task API without a worker: statuses change only by request."""
    with serve(db_url) as client:
        yield client
