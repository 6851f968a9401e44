"""The fleet as the UI sees it: where each desktop's live view answers, from the task service's
``GET /desktops``.

Every worker announces its desktop with the URL the rest of the fleet reaches it at
(``TASKS_DESKTOP_FLEET_URL``; in the chart, the pod's stable DNS name), so one UI origin serves every
desktop's live view at ``/desktops/<name>/vnc``. The directory asks the task service at most once a second and
trusts an answer for a few: noVNC loads dozens of files per view, and a desktop's URL changes only when it
is replaced. Only workers write it (they hold the database), so the proxy never goes where a browser asks,
only where a desktop said it answers.
"""

from __future__ import annotations

import asyncio
import re
import time

from deskpilot.client.agent import AsyncAgent
from deskpilot.taskapi.types import DESKTOP_NAME_PATTERN, DesktopOut

_NAME = re.compile(DESKTOP_NAME_PATTERN)
FRESH_S = 5.0  # a known desktop's URL is trusted this long
RETRY_S = 1.0  # an unknown name asks the task service again at most this often


def live_view_base(name: str | None) -> str:
    """Where a desktop's live view is served by this UI: its own path, or the UI's default desktop."""
    return f"/desktops/{name}/vnc" if name and _NAME.fullmatch(name) else "/vnc"


class DesktopDirectory:
    """Desktop name → the URL of its desktop service, refreshed from the task service."""

    def __init__(self, tasks: AsyncAgent) -> None:
        self.tasks = tasks
        self._urls: dict[str, str] = {}
        self._read_at = float("-inf")  # the last listing read
        self._asked_at = float("-inf")  # the last attempt, answered or not
        self._lock = asyncio.Lock()

    async def url(self, name: str) -> str | None:
        """The desktop's URL, or None when the fleet has no such desktop (or the task service cannot say)."""
        if not _NAME.fullmatch(name):
            return None
        if self._stale(name):
            async with self._lock:
                if self._stale(name):  # nobody refreshed it while this request waited
                    await self._refresh()
        return self._urls.get(name)

    def _stale(self, name: str) -> bool:
        now = time.monotonic()
        wanted = now - self._read_at > FRESH_S or name not in self._urls
        return wanted and now - self._asked_at > RETRY_S

    async def _refresh(self) -> None:
        self._asked_at = time.monotonic()
        try:
            desktops = await self.tasks.desktops()
        except Exception:  # the task service is down: keep what was known, ask again in a second
            return
        self.known(desktops)

    def known(self, desktops: list[DesktopOut]) -> None:
        """A fresh listing (also one read for a page): no need to ask again for a while."""
        self._urls = {d.name: d.url for d in desktops if d.url}
        self._read_at = time.monotonic()
