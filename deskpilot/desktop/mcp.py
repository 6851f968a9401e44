"""The desktop actions as MCP tools, served at ``/mcp`` with the MCP SDK's low-level ``Server``.

Tools come from the one tool table (``deskpilot.computer.tools.TOOLS``); a call is validated like a
``POST /computer-use`` body (``parse_action``) and run by the same ``DesktopController``, so an argument
error or a failed action comes back as ``isError: true`` with exactly the message the HTTP API gives.

Transports, both on ``/mcp`` so a client configured as ``{type: "sse", url: ".../mcp"}`` works unchanged:

- SSE: ``GET /mcp`` opens the event stream, messages are POSTed to ``/mcp/messages/?session_id=...``;
- streamable HTTP: ``POST /mcp`` (and ``GET``/``DELETE`` with an ``Mcp-Session-Id`` header).

``/compat/bytebot/mcp`` is the same endpoint, for clients given Bytebot's desktop base URL.

The SDK is imported on the first request to ``/mcp`` (``mcp_server.py`` holds what uses it), not when the
service starts: it and sse-starlette are ~35 MiB of the service's memory, which a desktop driven over HTTP
alone never needs.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING

import anyio
from anyio.abc import TaskGroup
from starlette.routing import BaseRoute, Mount, Route
from starlette.types import Receive, Scope, Send

from deskpilot.config import SecuritySettings
from deskpilot.desktop.compat_bytebot import PREFIX as BYTEBOT_PREFIX
from deskpilot.desktop.controller import DesktopController

if TYPE_CHECKING:
    from mcp.server.transport_security import TransportSecuritySettings

    from deskpilot.desktop.mcp_server import Served

LOCAL_HOSTS = ("127.0.0.1:*", "localhost:*", "[::1]:*")
BYTEBOT_MCP = f"{BYTEBOT_PREFIX}/mcp"


def transport_security(security: SecuritySettings) -> TransportSecuritySettings:
    """The MCP SDK's own Host and Origin check, from the settings the Guard in front of it uses: loopback
    plus ``DESKPILOT_ALLOWED_HOSTS`` (``*`` turns it off), same-origin plus ``DESKPILOT_ALLOWED_ORIGINS``.

    Behind a container port mapping or an ingress the Host header is the public name, so those names
    must be listed or the check disabled.
    """
    from mcp.server.transport_security import TransportSecuritySettings

    if "*" in security.allowed_hosts:
        return TransportSecuritySettings(enable_dns_rebinding_protection=False)
    hosts = [*LOCAL_HOSTS]
    for h in security.allowed_hosts:
        hosts += [h] if ":" in h else [h, f"{h}:*"]
    origins = [f"{scheme}://{h}" for h in hosts for scheme in ("http", "https")]
    origins += [o.rstrip("/") for o in security.allowed_origins]
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True, allowed_hosts=hosts, allowed_origins=origins
    )


def _served_type() -> type[Served]:
    from deskpilot.desktop.mcp_server import Served

    return Served


class MCPEndpoint:
    """The routes and lifespan of ``/mcp``, to add to the desktop FastAPI app."""

    def __init__(self, controller: DesktopController, security: SecuritySettings) -> None:
        self._controller, self._security = controller, security
        self._served: Served | None = None
        self._loading = asyncio.Lock()
        self._tasks: TaskGroup | None = None  # the lifespan's, where the SDK's session manager runs

    @property
    def routes(self) -> list[BaseRoute]:
        # `self` is an ASGI callable (not a function), so Starlette hands it the raw scope. Bytebot's Claude
        # Code agent looks for the tools at its desktop's base URL + /mcp: the same endpoint under its prefix
        # (the SSE stream names /mcp/messages/ for the messages, which resolves the same from either path).
        return [
            *(
                Route(path, endpoint=self, methods=["GET", "POST", "DELETE"])
                for path in ("/mcp", BYTEBOT_MCP)
            ),
            Mount("/mcp/messages/", app=self._post_message),
        ]

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await (await self._load())(scope, receive, send)

    async def _post_message(self, scope: Scope, receive: Receive, send: Send) -> None:
        await (await self._load()).post_message(scope, receive, send)

    async def _load(self) -> Served:
        """The SDK's server, imported (in a worker thread: ~0.3 s) and started on the first request."""
        if self._served is None:
            async with self._loading:
                if self._served is None:
                    served = (await asyncio.to_thread(_served_type))(self._controller, self._security)
                    if self._tasks is not None:  # else only SSE serves, as the SDK has it without run()
                        await self._tasks.start(served.run)
                    self._served = served
        return self._served

    @contextlib.asynccontextmanager
    async def lifespan(self) -> AsyncIterator[None]:
        """The task group the SDK's streamable-HTTP session manager runs in once loaded (it holds the
        sessions' tasks and the server's lifespan), stopped with the app."""
        async with anyio.create_task_group() as tasks:
            self._tasks = tasks
            try:
                yield
            finally:
                self._tasks = None
                tasks.cancel_scope.cancel()
