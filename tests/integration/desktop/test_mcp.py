"""The official MCP client against /mcp on a real desktop: SSE and streamable HTTP, all 16 tools."""

from __future__ import annotations

import base64
import functools
import io
import json
import os
import re
import uuid
from collections.abc import Iterator
from pathlib import Path

import anyio
import httpx
import pytest
from mcp import Client
from mcp.client import Transport
from mcp.client.sse import sse_client
from mcp.server import _streamable_http_modern
from mcp.types import BlobResourceContents, ImageContent, TextContent
from PIL import Image
from sse_starlette.event import ServerSentEvent

from deskpilot import __version__
from deskpilot.computer.actions import ACTION_MODELS
from deskpilot.computer.tools import TOOLS
from deskpilot.config import DesktopSettings
from deskpilot.desktop import mcp_fastpath
from deskpilot.desktop.api import create_app
from deskpilot.desktop.files import max_request_bytes
from testbed.net import ServerThread, send_head
from testbed.security import security
from testbed.xvfb import Display

pytestmark = pytest.mark.anyio


@pytest.fixture(scope="module")
def desktop(display: Display, files_dir: Path) -> Iterator[str]:
    settings = DesktopSettings(display=display.name, files_dir=files_dir)
    with ServerThread(create_app(settings, security=security(allowed_hosts=["desktop.example"]))) as server:
        yield server.url


def transports(url: str) -> dict[str, Transport | str]:
    return {"sse": sse_client(f"{url}/mcp"), "streamable-http": f"{url}/mcp"}


def text_of(content: object) -> str:
    assert isinstance(content, TextContent), content
    return content.text


def image_of(content: object) -> ImageContent:
    assert isinstance(content, ImageContent), content
    return content


@pytest.mark.parametrize("transport", ["sse", "streamable-http"])
async def test_lists_the_sixteen_desktop_tools(desktop: str, transport: str) -> None:
    async with Client(transports(desktop)[transport]) as client:
        tools = (await client.list_tools()).tools
        assert client.server_info is not None
        assert (client.server_info.name, client.server_info.version) == ("deskpilot-desktop", __version__)
    names = {t.name for t in tools}
    assert names == {f"computer_{a}" for a in ACTION_MODELS}
    assert len(names) == 17
    click = next(t for t in tools if t.name == "computer_click_mouse")
    assert click.description is not None and "1920x1080" in click.description
    assert set(click.input_schema["required"]) == {"button", "clickCount"}


def test_tool_schemas_are_the_http_models() -> None:
    for action, model in ACTION_MODELS.items():
        spec = TOOLS[f"computer_{action}"]
        assert spec.model is model
        assert set(spec.mcp_schema()["properties"]) == set(model.model_fields) - {"action"}


async def test_wait_takes_bytebots_default_duration(desktop: str) -> None:
    """computer_wait without a duration waits 500 ms, as Bytebot's tool does; the HTTP API still wants it."""
    async with Client(f"{desktop}/mcp") as client:
        wait = next(t for t in (await client.list_tools()).tools if t.name == "computer_wait")
        assert wait.input_schema["properties"]["duration"]["default"] == 500
        assert "duration" not in wait.input_schema.get("required", [])
        started = anyio.current_time()
        assert not (await client.call_tool("computer_wait", {})).is_error
        assert anyio.current_time() - started >= 0.5
        started = anyio.current_time()
        assert not (await client.call_tool("computer_wait", {"duration": 0})).is_error
        assert anyio.current_time() - started < 0.5
    async with httpx.AsyncClient() as http:
        assert (await http.post(f"{desktop}/computer-use", json={"action": "wait"})).status_code == 400


@pytest.mark.parametrize("transport", ["sse", "streamable-http"])
async def test_moves_the_mouse_and_reads_the_position_back(desktop: str, transport: str) -> None:
    async with Client(transports(desktop)[transport]) as client:
        moved = await client.call_tool("computer_move_mouse", {"coordinates": {"x": 321, "y": 654}})
        assert not moved.is_error
        pos = await client.call_tool("computer_cursor_position", {})
    assert pos.structured_content == {"x": 321, "y": 654}
    assert "321" in text_of(pos.content[0])


@pytest.mark.parametrize("transport", ["sse", "streamable-http"])
async def test_screenshot_is_png_image_content(desktop: str, transport: str) -> None:
    async with Client(transports(desktop)[transport]) as client:
        full = await client.call_tool("computer_screenshot", {})
        small = await client.call_tool("computer_screenshot", {"width": 960})
    [image] = full.content
    assert isinstance(image, ImageContent)
    assert image.type == "image" and image.mime_type == "image/png"
    assert Image.open(io.BytesIO(base64.b64decode(image.data))).size == (1920, 1080)
    assert Image.open(io.BytesIO(base64.b64decode(image_of(small.content[0]).data))).size == (960, 540)


async def test_writes_and_reads_a_file_as_an_embedded_resource(desktop: str, files_dir: Path) -> None:
    payload = "héllo from MCP\n".encode()
    name = f"mcp-note-{uuid.uuid4().hex[:8]}.txt"  # relative: in the service's files directory
    try:
        async with Client(sse_client(f"{desktop}/mcp")) as client:
            data = base64.b64encode(payload).decode()
            wrote = await client.call_tool("computer_write_file", {"path": name, "data": data})
            assert not wrote.is_error, wrote.content
            read = await client.call_tool("computer_read_file", {"path": name})
    finally:
        (files_dir / name).unlink(missing_ok=True)
    resource = next(c for c in read.content if c.type == "resource").resource
    assert isinstance(resource, BlobResourceContents)
    assert base64.b64decode(resource.blob) == payload
    assert resource.mime_type == "text/plain"
    assert resource.uri == f"file://{files_dir}/{name}"


@pytest.mark.parametrize("transport", ["sse", "streamable-http"])
async def test_writes_a_file_larger_than_the_sdks_default_body_limit(
    desktop: str, files_dir: Path, transport: str
) -> None:
    """The SDK refuses POST bodies over 4 MiB unless told otherwise; /mcp takes what /computer-use takes."""
    payload = os.urandom(5 << 20)
    name = f"mcp-big-{uuid.uuid4().hex[:8]}.bin"
    try:
        # a refused POST leaves an SSE client waiting for an answer that never comes
        with anyio.fail_after(30):
            async with Client(transports(desktop)[transport]) as client:
                data = base64.b64encode(payload).decode()
                wrote = await client.call_tool("computer_write_file", {"path": name, "data": data})
        assert not wrote.is_error, wrote.content
        assert (files_dir / name).read_bytes() == payload
    finally:
        (files_dir / name).unlink(missing_ok=True)


@pytest.mark.parametrize("path", ["/mcp", f"/mcp/messages/?session_id={uuid.uuid4().hex}"])
def test_an_oversize_post_is_refused_before_its_body_is_read(desktop: str, path: str) -> None:
    size = max_request_bytes(DesktopSettings().max_file_bytes) + 1
    status, _ = send_head(
        desktop,
        f"POST {path} HTTP/1.1\nHost: 127.0.0.1\nContent-Type: application/json\n"
        f"Accept: application/json, text/event-stream\nContent-Length: {size}\n",
    )
    assert status == 413


@pytest.mark.parametrize(
    ("tool", "arguments"),
    [
        ("computer_type_keys", {"keys": ["ctrl", "notakey"]}),
        ("computer_click_mouse", {"button": "left"}),
        ("computer_read_file", {"path": "no/such/file.txt"}),
    ],
)
async def test_errors_are_is_error_with_the_http_message(desktop: str, tool: str, arguments: dict) -> None:
    action = tool.removeprefix("computer_")
    async with httpx.AsyncClient() as http_client:
        http = await http_client.post(f"{desktop}/computer-use", json={"action": action, **arguments})
    assert http.status_code in (400, 404)
    async with Client(f"{desktop}/mcp") as client:
        result = await client.call_tool(tool, arguments)
    assert result.is_error
    assert text_of(result.content[0]) == http.json()["error"]


async def test_an_unknown_tool_is_an_error_naming_the_tools(desktop: str) -> None:
    async with Client(f"{desktop}/mcp") as client:
        result = await client.call_tool("computer_teleport", {})
    assert result.is_error
    assert text_of(result.content[0]).startswith("unknown tool 'computer_teleport'; available: computer_")


@pytest.mark.parametrize("transport", ["sse", "streamable-http"])
async def test_tools_work_without_the_speedups(
    display: Display, monkeypatch: pytest.MonkeyPatch, transport: str
) -> None:
    """On library versions the speed-ups were not tested with, install() leaves the SDK as it ships."""
    monkeypatch.setattr(ServerSentEvent, "_LINE_SEP_EXPR", re.compile(r"\r\n|\r|\n"))
    monkeypatch.setattr(_streamable_http_modern, "json", json)
    untested = functools.partial(mcp_fastpath.install, lambda dist: "99.0.0")
    monkeypatch.setattr(mcp_fastpath, "install", untested)
    with ServerThread(create_app(DesktopSettings(display=display.name), security=security())) as server:
        async with Client(transports(server.url)[transport]) as client:
            moved = await client.call_tool("computer_move_mouse", {"coordinates": {"x": 12, "y": 34}})
            pos = await client.call_tool("computer_cursor_position", {})
            shot = await client.call_tool("computer_screenshot", {"width": 960})
    assert not moved.is_error and pos.structured_content == {"x": 12, "y": 34}
    assert Image.open(io.BytesIO(base64.b64decode(image_of(shot.content[0]).data))).size == (960, 540)
    assert isinstance(ServerSentEvent._LINE_SEP_EXPR, re.Pattern)
    assert vars(_streamable_http_modern)["json"] is json  # the SDK module's private import


def test_host_header_protection_allows_loopback_and_configured_hosts(desktop: str) -> None:
    def refused(host: str) -> bool:
        body = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
        headers = {"Host": host, "Accept": "application/json, text/event-stream"}
        r = httpx.post(f"{desktop}/mcp", json=body, headers=headers)
        # the Guard in front of every route answers in the desktop's shape; the SDK's own check says 421
        return r.status_code == 421 or (r.status_code == 400 and "is not allowed" in r.json()["error"])

    assert refused("evil.example:9990")
    assert not refused("desktop.example")
    assert not refused("desktop.example:9990")


def test_sse_stream_checks_the_host_header_too(desktop: str) -> None:
    def opens(host: str) -> httpx.Response:
        with httpx.stream("GET", f"{desktop}/mcp", headers={"Host": host}) as response:
            return response  # headers only: the stream stays open until closed here

    assert opens("evil.example:9990").status_code == 400
    accepted = opens("desktop.example:9990")
    assert accepted.status_code == 200
    assert accepted.headers["content-type"].startswith("text/event-stream")
