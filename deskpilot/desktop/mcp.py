"""The desktop actions as MCP tools, served at ``/mcp`` with the MCP SDK's low-level ``Server``.

Tools come from the one tool table (``deskpilot.computer.tools.TOOLS``); a call is validated like a
``POST /computer-use`` body (``parse_action``) and run by the same ``DesktopController``, so an argument
error or a failed action comes back as ``isError: true`` with exactly the message the HTTP API gives.

Transports, both on ``/mcp`` so a client configured as ``{type: "sse", url: ".../mcp"}`` works unchanged:

- SSE: ``GET /mcp`` opens the event stream, messages are POSTed to ``/mcp/messages/?session_id=...``;
- streamable HTTP: ``POST /mcp`` (and ``GET``/``DELETE`` with an ``Mcp-Session-Id`` header).

``/compat/bytebot/mcp`` is the same endpoint, for clients given Bytebot's desktop base URL.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pybase64
from mcp.server import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.server.sse import SseServerTransport
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from mcp.types import (
    BlobResourceContents,
    CallToolRequestParams,
    CallToolResult,
    EmbeddedResource,
    ImageContent,
    ListToolsResult,
    PaginatedRequestParams,
    TextContent,
    Tool,
)
from starlette.routing import BaseRoute, Mount, Route
from starlette.types import Receive, Scope, Send

from deskpilot import __version__
from deskpilot.computer.actions import parse_action
from deskpilot.computer.geometry import SCREEN
from deskpilot.computer.tools import PREFIX, TOOLS, ToolSpec
from deskpilot.config import SecuritySettings
from deskpilot.desktop import mcp_fastpath
from deskpilot.desktop.compat_bytebot import PREFIX as BYTEBOT_PREFIX
from deskpilot.desktop.controller import DesktopController, Outcome
from deskpilot.desktop.files import max_request_bytes
from deskpilot.desktop.outcome import geometry
from deskpilot.errors import DesktopError

log = logging.getLogger(__name__)

INSTRUCTIONS = (
    f"Tools that drive a real {SCREEN} Linux desktop: look with {PREFIX}screenshot, act with the mouse and "
    f"keyboard tools, switch programs with {PREFIX}application, move files with {PREFIX}write_file and "
    f"{PREFIX}read_file. Coordinates are screen pixels, origin at the top-left corner."
)
LOCAL_HOSTS = ("127.0.0.1:*", "localhost:*", "[::1]:*")
BYTEBOT_MCP = f"{BYTEBOT_PREFIX}/mcp"


class DesktopTools:
    """The tool table as the low-level server's ``tools/list`` and ``tools/call`` handlers."""

    def __init__(self, controller: DesktopController) -> None:
        self.controller = controller
        self.tools = [
            Tool(
                name=t.name,
                title=t.title,
                description=t.describe(SCREEN, "screen"),
                input_schema=t.mcp_schema(),
            )
            for t in TOOLS.values()
        ]
        self.schemas = {t.name: t.input_schema for t in self.tools}

    def server(self) -> Server[Any]:
        return Server(
            "deskpilot-desktop",
            version=__version__,
            instructions=INSTRUCTIONS,
            get_tool_input_schema=self.schemas.get,
            on_list_tools=self.list_tools,
            on_call_tool=self.call_tool,
        )

    async def list_tools(
        self, ctx: ServerRequestContext[Any], params: PaginatedRequestParams | None
    ) -> ListToolsResult:
        return ListToolsResult(tools=self.tools)

    async def call_tool(
        self, ctx: ServerRequestContext[Any], params: CallToolRequestParams
    ) -> CallToolResult:
        spec = TOOLS.get(params.name)
        if spec is None:
            return error_result(f"unknown tool {params.name!r}; available: {', '.join(TOOLS)}")
        try:
            body = {**spec.mcp_defaults, **(params.arguments or {}), "action": spec.action}
            outcome = await self.controller.perform(parse_action(body), "mcp")
        except DesktopError as exc:
            return error_result(exc.message)  # the HTTP API's message, verbatim
        except Exception as exc:
            # What the HTTP API answers with a 500; a tool result keeps the client's session going.
            log.exception("MCP tool call failed", extra={"tool": params.name})
            return error_result(f"internal error: {type(exc).__name__}: {exc}")
        return to_result(spec, outcome)


def error_result(message: str) -> CallToolResult:
    return CallToolResult(content=[TextContent(text=message)], is_error=True)


def to_result(spec: ToolSpec, outcome: Outcome) -> CallToolResult:
    """Image content for screenshots, structured x/y for the cursor, an embedded blob for a file read."""
    observed = outcome.observed()  # not to_dict(): that would base64-encode the image a second time
    if outcome.image is not None:
        image = outcome.image
        if image.scaled:  # where the image lies, to map its points back (or send them with ``space``)
            observed.update(geometry(image))
        return CallToolResult(
            content=[
                ImageContent(data=pybase64.b64encode_as_string(image.data), mime_type=image.media_type),
            ],
            structured_content=observed or None,
        )
    if outcome.position is not None:
        x, y = outcome.position
        text = TextContent(text=f"The pointer is at x={x}, y={y}.")
        return CallToolResult(content=[text], structured_content={"x": x, "y": y})
    if outcome.file is not None:
        f = outcome.file
        blob = BlobResourceContents(
            uri=Path(f.path).as_uri(), mime_type=f.media_type, blob=pybase64.b64encode_as_string(f.data)
        )
        return CallToolResult(
            content=[
                TextContent(text=f"{f.name}: {f.size} bytes, {f.media_type}"),
                EmbeddedResource(resource=blob),
            ]
        )
    text = TextContent(text=outcome.message or f"{spec.action} done.")
    return CallToolResult(content=[text], structured_content=observed or None)


def transport_security(security: SecuritySettings) -> TransportSecuritySettings:
    """The MCP SDK's own Host and Origin check, from the settings the Guard in front of it uses: loopback
    plus ``DESKPILOT_ALLOWED_HOSTS`` (``*`` turns it off), same-origin plus ``DESKPILOT_ALLOWED_ORIGINS``.

    Behind a container port mapping or an ingress the Host header is the public name, so those names
    must be listed or the check disabled.
    """
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


class MCPEndpoint:
    """The routes and lifespan of ``/mcp``, to add to the desktop FastAPI app."""

    def __init__(self, controller: DesktopController, security: SecuritySettings) -> None:
        self._speedups = mcp_fastpath.install()
        self.server = DesktopTools(controller).server()
        self._init_options = self.server.create_initialization_options()
        checks = transport_security(security)
        # The SDK refuses larger POST bodies with 413 while they stream (its own default is 4 MiB, which
        # would cap computer_write_file at 3 MiB): the same bound as POST /computer-use.
        limit = max_request_bytes(controller.settings.max_file_bytes)
        self._sessions = StreamableHTTPSessionManager(
            app=self.server, security_settings=checks, max_request_body_size=limit
        )
        self._sse = SseServerTransport(
            "/mcp/messages/", security_settings=checks, max_request_body_size=limit
        )

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
            Mount("/mcp/messages/", app=self._sse.handle_post_message),
        ]

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        # A GET without a session id is a legacy SSE client opening its stream; everything else
        # (POST, DELETE, a streamable-HTTP client's GET with Mcp-Session-Id) is streamable HTTP.
        headers = dict(scope["headers"])
        legacy_sse = scope["method"] == "GET" and b"mcp-session-id" not in headers
        await (self._serve_sse if legacy_sse else self._sessions.handle_request)(scope, receive, send)

    async def _serve_sse(self, scope: Scope, receive: Receive, send: Send) -> None:
        """One legacy SSE connection, its outgoing messages through ``FastWrites`` where installed."""
        opened = False
        try:
            async with self._sse.connect_sse(scope, receive, send) as (read, write):
                opened = True
                if mcp_fastpath.SSE_WRITES in self._speedups:
                    write = mcp_fastpath.FastWrites(write)
                await self.server.run(read, write, self._init_options)
        except ValueError:
            if opened:
                raise
            # connect_sse has already answered (a refused Host or Origin) and raises to say so.

    @contextlib.asynccontextmanager
    async def lifespan(self) -> AsyncIterator[None]:
        """The streamable-HTTP session manager must run for the app's lifetime (it holds the sessions'
        tasks and the server's lifespan)."""
        async with self._sessions.run():
            yield
