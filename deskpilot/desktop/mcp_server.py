"""What of ``/mcp`` needs the MCP SDK: the tool table as the low-level server's handlers, and the SDK's
transports serving it. ``mcp.MCPEndpoint`` imports this module on the first request to ``/mcp``, not when the
service starts: the SDK and sse-starlette are ~35 MiB of the desktop service's memory.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import anyio
import orjson
import pybase64
from anyio.abc import TaskStatus
from mcp.server import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.server.sse import SseServerTransport
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
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
from starlette.types import Receive, Scope, Send

from deskpilot import __version__
from deskpilot.computer.actions import parse_action
from deskpilot.computer.geometry import SCREEN
from deskpilot.computer.tools import PREFIX, TOOLS, ToolSpec
from deskpilot.config import SecuritySettings
from deskpilot.desktop import mcp_fastpath
from deskpilot.desktop.controller import DesktopController, Outcome
from deskpilot.desktop.files import max_request_bytes
from deskpilot.desktop.mcp import transport_security
from deskpilot.desktop.outcome import geometry
from deskpilot.errors import DesktopError, internal_error_text

log = logging.getLogger(__name__)

INSTRUCTIONS = (
    f"Tools that drive a real {SCREEN} Linux desktop: look with {PREFIX}screenshot, act with the mouse and "
    f"keyboard tools, switch programs with {PREFIX}application, move files with {PREFIX}write_file and "
    f"{PREFIX}read_file. Coordinates are screen pixels, origin at the top-left corner."
)


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
            return error_result(internal_error_text(exc))
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
    if outcome.data is not None:  # the accessibility tree: as JSON text, and structured
        text = TextContent(text=orjson.dumps(outcome.data).decode())
        return CallToolResult(content=[text], structured_content=outcome.data)
    text = TextContent(text=outcome.message or f"{spec.action} done.")
    return CallToolResult(content=[text], structured_content=observed or None)


class Served:
    """The SDK's server and its two transports, for one ``MCPEndpoint``."""

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

    async def run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """The streamable-HTTP session manager, until cancelled (it holds the sessions' tasks and the
        server's lifespan)."""
        async with self._sessions.run():
            task_status.started()
            await anyio.sleep_forever()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        # A GET without a session id is a legacy SSE client opening its stream; everything else
        # (POST, DELETE, a streamable-HTTP client's GET with Mcp-Session-Id) is streamable HTTP.
        headers = dict(scope["headers"])
        legacy_sse = scope["method"] == "GET" and b"mcp-session-id" not in headers
        await (self._serve_sse if legacy_sse else self._sessions.handle_request)(scope, receive, send)

    async def post_message(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self._sse.handle_post_message(scope, receive, send)

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
