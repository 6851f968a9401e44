"""/vnc on the desktop service: noVNC's page and the WebSocket bridge, against real x11vnc on real Xvfb.

View only is the bridge's doing, not noVNC's: a raw RFB client sends input over a view-only connection
and the real pointer and keyboard (read back through the test's own X connection) do not move; the same
over an interactive connection does.
"""

from __future__ import annotations

import asyncio
import struct
from collections.abc import Iterator
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest
import websockets
from fastapi import FastAPI
from websockets.typing import Subprotocol
from Xlib import XK

from deskpilot.config import DesktopSettings
from deskpilot.desktop import vnc
from deskpilot.desktop.api import create_app
from testbed.net import ServerThread, free_port
from testbed.timing import wait_until
from testbed.xvfb import Display
from tests.integration.desktop.conftest import XReader

FRAME_HEADERS = {"x-frame-options": "DENY", "content-security-policy": "frame-ancestors 'none'"}


@pytest.fixture(scope="module")
def desktop(vnc_port: int, monkeypatch_module) -> Iterator[str]:
    monkeypatch_module.setenv("DESKTOP_VNC_PORT", str(vnc_port))
    with ServerThread(create_app()) as server:
        yield server.url


@pytest.fixture(scope="module")
def monkeypatch_module() -> Iterator[pytest.MonkeyPatch]:
    with pytest.MonkeyPatch.context() as mp:
        yield mp


@pytest.fixture
def x(display: Display) -> Iterator[XReader]:
    reader = XReader(display.name)
    yield reader
    reader.close()


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
    query = parse_qs(urlsplit(r.headers["location"]).query)
    assert query["view_only"] == ["false"]
    assert query["path"] == ["vnc/websockify?interactive=1"]  # the bridge takes input on this one only


def test_vnc_serves_novnc_files(desktop: str) -> None:
    page = httpx.get(f"{desktop}/vnc/vnc.html")
    assert page.status_code == 200 and "noVNC" in page.text
    rfb = httpx.get(f"{desktop}/vnc/core/rfb.js")
    assert rfb.status_code == 200 and "javascript" in rfb.headers["content-type"]


@pytest.mark.parametrize("path", ["/vnc", "/vnc/?interactive=1", "/vnc/vnc.html", "/vnc/core/rfb.js"])
def test_no_other_site_may_frame_the_live_view(desktop: str, path: str) -> None:
    r = httpx.get(desktop + path)
    for name, value in FRAME_HEADERS.items():
        assert r.headers.get_list(name) == [value], (path, r.status_code, name)


def test_websocket_bridge_speaks_rfb_with_x11vnc(desktop: str) -> None:
    async def handshake() -> tuple[bytes, bytes]:
        uri = desktop.replace("http", "ws") + "/vnc/websockify"
        async with websockets.connect(uri, subprotocols=[Subprotocol("binary")]) as ws:
            assert ws.subprotocol == "binary"
            version = await asyncio.wait_for(ws.recv(), 5)
            await ws.send(b"RFB 003.008\n")
            security = await asyncio.wait_for(ws.recv(), 5)
            assert isinstance(version, bytes) and isinstance(security, bytes)
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


# ------------------------------------------------------------------------------- view only, enforced


class RawRFB:
    """A bare RFB 3.8 client over the bridge's WebSocket: it sends whatever the test says, as a foreign
    page could (noVNC's own view-only setting plays no part)."""

    def __init__(self, ws: websockets.ClientConnection) -> None:
        self.ws = ws
        self.buf = b""

    async def read(self, n: int) -> bytes:
        while len(self.buf) < n:
            frame = await asyncio.wait_for(self.ws.recv(), 10)
            self.buf += frame if isinstance(frame, bytes) else frame.encode()
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    async def handshake(self) -> None:
        assert (await self.read(12)).startswith(b"RFB 003.")
        await self.ws.send(b"RFB 003.008\n")
        types = await self.read((await self.read(1))[0])
        assert 1 in types, f"x11vnc -nopw offers None, got {list(types)}"
        await self.ws.send(b"\x01")
        assert await self.read(4) == b"\0\0\0\0", "security result"
        await self.ws.send(b"\x01")  # ClientInit: shared
        init = await self.read(24)
        self.bytes_per_pixel = init[4] // 8
        await self.read(struct.unpack(">I", init[20:24])[0])  # the desktop's name

    async def pointer(self, x: int, y: int, buttons: int = 0) -> None:
        await self.ws.send(struct.pack(">BBHH", 5, buttons, x, y))

    async def key(self, keysym: int, down: bool) -> None:
        await self.ws.send(struct.pack(">BBxxI", 4, int(down), keysym))

    async def sync(self) -> None:
        """Ask for one pixel and wait for it: x11vnc handles a client's messages in order, so whatever
        was sent before has been acted on (or never arrived) once the update is here."""
        await self.ws.send(struct.pack(">BBHHHH", 3, 0, 0, 0, 1, 1))
        while True:
            kind = (await self.read(1))[0]
            if kind == 0:  # FramebufferUpdate, raw rectangles (no encodings were asked for)
                _, rects = struct.unpack(">BH", await self.read(3))
                for _ in range(rects):
                    _, _, w, h, _ = struct.unpack(">HHHHi", await self.read(12))
                    await self.read(w * h * self.bytes_per_pixel)
                return
            if kind == 3:  # ServerCutText
                await self.read(struct.unpack(">xxxI", await self.read(7))[0])
            elif kind != 2:  # Bell has no body; nothing else is sent unasked
                raise AssertionError(f"unexpected server message {kind}")


def rfb_session(desktop: str, query: str, script) -> object:
    async def run() -> object:
        uri = desktop.replace("http", "ws") + "/vnc/websockify" + query
        async with websockets.connect(uri, subprotocols=[Subprotocol("binary")]) as ws:
            client = RawRFB(ws)
            await client.handshake()
            return await script(client)

    return asyncio.run(run())


def key_down(x: XReader, keysym: int) -> bool:
    code = x.d.keysym_to_keycode(keysym)
    return bool(x.d.query_keymap()[code // 8] & (1 << (code % 8)))


def test_a_view_only_connection_cannot_move_the_pointer_or_press_keys(desktop: str, x: XReader) -> None:
    x.root.warp_pointer(11, 22)
    x.d.sync()
    assert x.pointer() == (11, 22)
    a = XK.string_to_keysym("a")

    async def try_input(client: RawRFB) -> None:
        await client.pointer(700, 500)
        await client.pointer(710, 510, buttons=4)  # the wheel, down
        await client.key(a, down=True)
        await client.sync()
        await asyncio.sleep(0.3)  # and a little longer, should x11vnc act later than it answers

    rfb_session(desktop, "", try_input)
    assert x.pointer() == (11, 22), "a view-only client moved the real pointer"
    assert not key_down(x, a), "a view-only client pressed a real key"


def test_an_interactive_connection_moves_the_pointer_and_presses_keys(desktop: str, x: XReader) -> None:
    x.root.warp_pointer(11, 22)
    x.d.sync()
    a = XK.string_to_keysym("a")

    async def give_input(client: RawRFB) -> None:
        await client.pointer(700, 500)
        await client.key(a, down=True)
        await client.sync()
        await asyncio.to_thread(wait_until, lambda: x.pointer() == (700, 500), 5, what="the pointer to move")
        await asyncio.to_thread(wait_until, lambda: key_down(x, a), 5, what="the key to go down")
        await client.key(a, down=False)
        await client.sync()
        await asyncio.to_thread(wait_until, lambda: not key_down(x, a), 5, what="the key to come up")

    rfb_session(desktop, "?interactive=1", give_input)


def test_a_view_only_connection_the_filter_cannot_follow_is_closed(desktop: str) -> None:
    async def unknown_message(client: RawRFB) -> int | None:
        await client.ws.send(b"\x07" + b"\0" * 15)  # no such client message: its length is unknowable
        with pytest.raises(websockets.ConnectionClosed) as closed:
            while True:
                await asyncio.wait_for(client.ws.recv(), 5)
        return closed.value.rcvd.code if closed.value.rcvd else None

    assert rfb_session(desktop, "", unknown_message) == 1008
