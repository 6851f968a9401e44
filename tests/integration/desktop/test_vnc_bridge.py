"""/vnc on the desktop service: noVNC's page and the WebSocket bridge, against real x11vnc on real Xvfb."""

from __future__ import annotations

import asyncio
import socket
import time
from collections.abc import Iterator
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest
import websockets
from fastapi import FastAPI

from deskpilot.config import DesktopSettings
from deskpilot.desktop import vnc
from deskpilot.desktop.api import create_app
from tests.support.net import ServerThread, free_port
from tests.support.xvfb import Display


@pytest.fixture(scope="module")
def x11vnc(display: Display) -> Iterator[int]:
    port = free_port()
    proc = display.spawn(
        [
            "x11vnc",
            "-display",
            display.name,
            "-localhost",
            "-rfbport",
            str(port),
            "-forever",
            "-shared",
            "-nopw",
            "-quiet",
            "-noxdamage",
        ]
    )
    deadline = time.monotonic() + 10
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            break
        except OSError:
            assert proc.poll() is None and time.monotonic() < deadline, "x11vnc did not start"
            time.sleep(0.05)
    yield port


@pytest.fixture(scope="module")
def desktop(x11vnc: int, monkeypatch_module) -> Iterator[str]:
    monkeypatch_module.setenv("DESKTOP_VNC_PORT", str(x11vnc))
    with ServerThread(create_app()) as server:
        yield server.url


@pytest.fixture(scope="module")
def monkeypatch_module() -> Iterator[pytest.MonkeyPatch]:
    with pytest.MonkeyPatch.context() as mp:
        yield mp


def test_vnc_redirects_to_a_view_only_novnc_page_by_default(desktop: str) -> None:
    r = httpx.get(f"{desktop}/vnc")
    assert r.status_code == 307
    url = urlsplit(r.headers["location"])
    assert url.path == "/vnc/vnc.html"
    query = parse_qs(url.query)
    assert query["view_only"] == ["true"]
    assert query["path"] == ["vnc/websockify"]
    assert query["autoconnect"] == ["true"]


@pytest.mark.parametrize("flag", ["interactive=1", "view_only=false"])
def test_vnc_query_flag_gives_interactive_control(desktop: str, flag: str) -> None:
    r = httpx.get(f"{desktop}/vnc/?{flag}")
    assert parse_qs(urlsplit(r.headers["location"]).query)["view_only"] == ["false"]


def test_vnc_serves_novnc_files(desktop: str) -> None:
    page = httpx.get(f"{desktop}/vnc/vnc.html")
    assert page.status_code == 200 and "noVNC" in page.text
    rfb = httpx.get(f"{desktop}/vnc/core/rfb.js")
    assert rfb.status_code == 200 and "javascript" in rfb.headers["content-type"]


def test_websocket_bridge_speaks_rfb_with_x11vnc(desktop: str) -> None:
    async def handshake() -> tuple[bytes, bytes]:
        uri = desktop.replace("http", "ws") + "/vnc/websockify"
        async with websockets.connect(uri, subprotocols=["binary"]) as ws:
            assert ws.subprotocol == "binary"
            version = await asyncio.wait_for(ws.recv(), 5)
            await ws.send(b"RFB 003.008\n")
            security = await asyncio.wait_for(ws.recv(), 5)
            return version, security

    version, security = asyncio.run(handshake())
    assert version == b"RFB 003.008\n"
    assert security[0] >= 1  # at least one security type offered (None, since -nopw)


def test_websocket_closes_with_1011_when_vnc_is_down() -> None:
    app = FastAPI()
    vnc.install(app, DesktopSettings(vnc_port=free_port()))  # nothing listens there

    async def connect() -> int | None:
        with ServerThread(app) as server:
            async with websockets.connect(server.url.replace("http", "ws") + "/vnc/websockify") as ws:
                with pytest.raises(websockets.ConnectionClosed) as closed:
                    await asyncio.wait_for(ws.recv(), 5)
                return closed.value.rcvd.code if closed.value.rcvd else None

    assert asyncio.run(connect()) == 1011
