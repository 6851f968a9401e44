"""Async client of the desktop service's one endpoint, ``POST {AGENT_DESKTOP_URL}/computer-use``."""

from __future__ import annotations

from typing import Any

import httpx
import pybase64


class DesktopClientError(Exception):
    """The desktop refused or failed an action; ``status`` is its HTTP status (0 when unreachable)."""

    def __init__(self, message: str, status: int = 0) -> None:
        super().__init__(message)
        self.message = message
        self.status = status


class DesktopClient:
    """``token``: the desktop's ``DESKPILOT_TOKEN``, sent as ``Authorization: Bearer`` (never in a URL)."""

    def __init__(
        self,
        base_url: str,
        timeout: float = 60.0,
        client: httpx.AsyncClient | None = None,
        *,
        token: str | None = None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self._client = client or httpx.AsyncClient(base_url=self.base_url, timeout=timeout)
        self._headers = {"Authorization": f"Bearer {token}"} if token else {}

    async def aclose(self) -> None:
        await self._client.aclose()

    async def action(self, action: str, **fields: Any) -> dict[str, Any]:
        """Run one action; returns the result body, raises DesktopClientError unless ``success`` is true."""
        try:
            r = await self._client.post(
                "/computer-use", json={"action": action, **fields}, headers=self._headers
            )
        except httpx.HTTPError as e:
            raise DesktopClientError(f"desktop service at {self.base_url} unreachable: {e!r}") from e
        try:
            body = r.json()
        except ValueError:
            body = {}
        if r.status_code >= 400 or not isinstance(body, dict) or not body.get("success"):
            detail = body.get("error") or body.get("message") if isinstance(body, dict) else None
            raise DesktopClientError(
                f"{action} failed ({r.status_code}): {detail or r.text[:200]}", r.status_code
            )
        return body

    async def write_file(self, path: str, data: bytes, *, overwrite: bool = True) -> str:
        """Write ``data`` at ``path`` on the desktop (relative: under ~/Desktop); returns its message.
        With ``overwrite=False`` an existing file is left alone: DesktopClientError with status 409."""
        encoded = pybase64.b64encode(data).decode("ascii")
        extension = {} if overwrite else {"overwrite": False}  # the spec's request unless asked otherwise
        body = await self.action("write_file", path=path, data=encoded, **extension)
        return str(body.get("message", ""))

    async def read_file(self, path: str) -> bytes:
        body = await self.action("read_file", path=path)
        return pybase64.b64decode(body.get("data", ""))
