"""The few agent-service reads the UI server needs to render a page before any JavaScript runs."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any
from urllib.parse import quote

import httpx

from deskpilot.taskapi.types import FINISHED, TaskStatus


class AgentUnavailable(Exception):
    """The agent service did not answer (down, wrong UI_AGENT_URL, time-out)."""

    def __init__(self, base_url: str, error: Exception) -> None:
        super().__init__(f"The agent service at {base_url} is not reachable ({type(error).__name__}).")


class AgentFailed(Exception):
    """The agent answered with an error body ``{statusCode, message, error}``."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


# The status tabs of the task list: (key, label, statuses sent to the agent).
FILTERS: list[tuple[str, str, list[TaskStatus]]] = [
    ("all", "All", []),
    ("active", "Active", [s for s in TaskStatus if s not in FINISHED]),
    ("attention", "Needs you", [TaskStatus.NEEDS_HELP, TaskStatus.NEEDS_REVIEW]),
    ("completed", "Completed", [TaskStatus.COMPLETED]),
    ("failed", "Failed / cancelled", [TaskStatus.FAILED, TaskStatus.CANCELLED]),
]


def statuses_for(filter_key: str) -> list[TaskStatus]:
    for key, _label, statuses in FILTERS:
        if key == filter_key:
            return statuses
    return []


class AgentClient:
    def __init__(self, base_url: str, client: httpx.AsyncClient) -> None:
        self.base_url = base_url.rstrip("/")
        self.client = client

    async def _get(self, path: str, params: dict[str, Any] | None = None) -> httpx.Response:
        try:
            response = await self.client.get(self.base_url + path, params=params)
        except httpx.HTTPError as exc:
            raise AgentUnavailable(self.base_url, exc) from exc
        if response.status_code >= 400:
            try:
                message = response.json().get("message") or response.text
            except ValueError:
                message = response.text
            raise AgentFailed(response.status_code, str(message))
        return response

    async def list_tasks(
        self, statuses: Sequence[str], limit: int, offset: int
    ) -> tuple[list[dict[str, Any]], int]:
        params: dict[str, Any] = {"limit": limit, "offset": offset}
        if statuses:
            params["statuses"] = ",".join(statuses)
        response = await self._get("/tasks", params)
        tasks = response.json()
        total = int(response.headers.get("x-total-count", len(tasks)))
        return tasks, total

    async def trajectory(self, task_id: str) -> bytes:
        """The task's trajectory archive (a zip)."""
        return (await self._get(f"/tasks/{quote(task_id, safe='')}/trajectory")).content

    async def get_task(self, task_id: str) -> dict[str, Any]:
        task: dict[str, Any] = (await self._get(f"/tasks/{quote(task_id, safe='')}")).json()
        return task

    async def messages(self, task_id: str, offset: int, page: int = 500) -> list[dict[str, Any]]:
        """Every message from ``offset`` on, oldest first (the agent pages them)."""
        out: list[dict[str, Any]] = []
        while True:
            params = {"offset": offset + len(out), "limit": page}
            batch = (await self._get(f"/tasks/{quote(task_id, safe='')}/messages", params)).json()
            out += batch
            if len(batch) < page:
                return out

    async def models(self) -> list[dict[str, Any]]:
        models: list[dict[str, Any]] = (await self._get("/tasks/models")).json()
        return models

    async def desktops(self) -> list[dict[str, Any]]:
        """The fleet's desktops (``GET /desktops``): name, state, the task each runs, its URL."""
        desktops: list[dict[str, Any]] = (await self._get("/desktops")).json()
        return desktops
