"""The UI's same-origin proxy: /api/* to the agent and /vnc* to the desktop, HTTP and WebSocket, streamed.

The upstream here is a small real HTTP server that echoes what reaches it, so the proxy's mechanics
(streaming, binary frames, subprotocols, redirects) are checked on their own; the pages and flows
are tested against the real task service in tests/e2e/test_ui_browser.py.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator

import httpx
import pytest
from fastapi import FastAPI, Request, WebSocket
from fastapi.responses import RedirectResponse, StreamingResponse
from websockets.sync.client import connect
from websockets.typing import Subprotocol

from deskpilot.config import UISettings
from deskpilot.ui.server import create_app
from testbed.net import ServerThread, free_port


def echo_app() -> FastAPI:
    app = FastAPI()

    @app.get("/stream")
    async def stream() -> StreamingResponse:
        async def chunks():
            yield b"first\n"
            await asyncio.sleep(1.0)
            yield b"second\n"

        return StreamingResponse(chunks(), media_type="text/plain")

    @app.post("/tasks")  # the one path the UI lets multipart bodies through to (task uploads)
    async def echo(request: Request) -> dict:
        body = await request.body()
        return {
            "size": len(body),
            "type": request.headers.get("content-type"),
            "query": request.url.query,
            "forwardedHost": request.headers.get("x-forwarded-host"),
        }

    @app.get("/vnc")
    def vnc(request: Request) -> RedirectResponse:
        return RedirectResponse(str(request.base_url) + "vnc/vnc.html?path=vnc/websockify", 307)

    @app.get("/vnc/core/{name}")
    def vnc_file(name: str) -> StreamingResponse:
        return StreamingResponse(iter([b"export default 1;"]), media_type="text/javascript")

    @app.websocket("/vnc/websockify")
    async def bridge(ws: WebSocket) -> None:
        await ws.accept(subprotocol="binary" if "binary" in ws.scope["subprotocols"] else None)
        while True:
            msg = await ws.receive()
            if msg["type"] == "websocket.disconnect":
                return
            if msg.get("bytes") is not None:
                await ws.send_bytes(msg["bytes"][::-1])
            else:
                await ws.send_text("echo:" + msg["text"])

    @app.websocket("/ws")
    async def events(ws: WebSocket) -> None:
        await ws.accept()
        await ws.send_json({"event": "hello", "data": {"query": ws.url.query}})
        await ws.close(code=4001, reason="bye")

    return app


@pytest.fixture(scope="module")
def ui() -> Iterator[str]:
    with ServerThread(echo_app()) as upstream:
        settings = UISettings(tasks_url=upstream.url, desktop_url=upstream.url)
        with ServerThread(create_app(settings)) as server:
            yield server.url


def test_response_bodies_are_streamed_not_buffered(ui: str) -> None:
    with httpx.stream("GET", f"{ui}/api/stream") as r:
        start = time.monotonic()
        lines = r.iter_lines()
        assert next(lines) == "first"
        assert time.monotonic() - start < 0.8, "the first chunk waited for the whole body"
        assert next(lines) == "second"


def test_request_bodies_and_query_reach_the_upstream(ui: str) -> None:
    files = {"files": ("big.bin", b"x" * 3_000_000, "application/octet-stream")}
    r = httpx.post(f"{ui}/api/tasks?a=1&b=%20", data={"description": "d"}, files=files)
    assert r.status_code == 200
    body = r.json()
    assert body["size"] > 3_000_000
    assert body["type"].startswith("multipart/form-data; boundary=")
    assert body["query"] == "a=1&b=%20"
    assert body["forwardedHost"] == ui.removeprefix("http://")


def test_redirects_to_the_upstream_come_back_through_the_proxy(ui: str) -> None:
    r = httpx.get(f"{ui}/vnc")
    assert r.status_code == 307
    assert r.headers["location"] == "/vnc/vnc.html?path=vnc/websockify"
    r = httpx.get(f"{ui}/vnc/core/rfb.js")
    assert r.headers["content-type"].startswith("text/javascript")


def test_websocket_relays_binary_and_text_with_the_subprotocol(ui: str) -> None:
    url = ui.replace("http", "ws") + "/vnc/websockify"
    with connect(url, subprotocols=[Subprotocol("binary")]) as ws:
        assert ws.subprotocol == "binary"
        ws.send(b"\x00\x01\x02")
        assert ws.recv(timeout=5) == b"\x02\x01\x00"
        ws.send("hi")
        assert ws.recv(timeout=5) == "echo:hi"


def test_websocket_passes_the_query_and_the_close_code(ui: str) -> None:
    with connect(ui.replace("http", "ws") + "/api/ws?taskId=42") as ws:
        assert '"query":"taskId=42"' in ws.recv(timeout=5)
        with pytest.raises(Exception):  # noqa: B017 - the close is what is checked below
            ws.recv(timeout=5)
        assert ws.close_code == 4001


def test_unreachable_upstream_answers_in_the_agent_error_shape() -> None:
    dead = f"http://127.0.0.1:{free_port()}"
    with ServerThread(create_app(UISettings(tasks_url=dead, desktop_url=dead))) as server:
        r = httpx.get(f"{server.url}/api/tasks")
        assert r.status_code == 502
        assert r.json()["error"] == "Bad Gateway"
        assert dead in r.json()["message"]
        with connect(server.url.replace("http", "ws") + "/api/ws") as ws:
            with pytest.raises(Exception):  # noqa: B017
                ws.recv(timeout=5)
            assert ws.close_code == 1011
            assert ws.close_reason is not None and "not reachable" in ws.close_reason
