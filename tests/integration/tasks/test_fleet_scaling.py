"""The chart's KEDA trigger counts the right tasks: its query, as helm renders it, run against a real
PostgreSQL holding the task service's own schema (the migrations) and tasks made through the API."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

import asyncpg
import pytest

from testbed.helm import helm_env_in, render
from testbed.postgres import PostgresServer
from testbed.task_service import serve

pytestmark = pytest.mark.postgres


def keda_query(tmp_path_factory: pytest.TempPathFactory) -> str:
    settings = ["desktops.replicas=2", "postgresql.enabled=true", "desktops.autoscaling.enabled=true"]
    objects = render(helm_env_in(tmp_path_factory), settings)
    (trigger,) = objects[("ScaledObject", "desk-deskpilot-desktop")]["spec"]["triggers"]
    query: str = trigger["metadata"]["query"]
    return query


def test_the_keda_query_counts_due_and_running_tasks(
    pg_server: PostgresServer, tmp_path_factory: pytest.TempPathFactory
) -> None:
    query = keda_query(tmp_path_factory)
    url = pg_server.create_database()
    later = (datetime.now(UTC) + timedelta(hours=1)).isoformat()
    with serve(url) as api:
        for body in (
            {"description": "due"},
            {"description": "due too"},
            {"description": "later", "scheduledFor": later},
        ):
            assert api.post("/tasks", json=body).status_code == 201
        done = api.post("/tasks", json={"description": "done"}).json()
        assert api.patch(f"/tasks/{done['id']}", json={"status": "CANCELLED"}).status_code == 200

        async def count() -> int:
            conn = await asyncpg.connect(url)
            try:
                return int(await conn.fetchval(query))
            finally:
                await conn.close()

        assert asyncio.run(count()) == 2  # not the one scheduled for later, not the cancelled one
