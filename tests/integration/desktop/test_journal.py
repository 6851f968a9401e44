"""The journal over real HTTP, MCP and the VNC bridge: every actor's actions, recorded with who sent them,
their outcome and the frame after them; bounded; the human's input on an interactive live view translated
into the same actions (a raw RFB client through ``/vnc/websockify?interactive=1`` to a real x11vnc)."""

from __future__ import annotations

import asyncio
import hashlib
import io
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pybase64
import pytest
import websockets
from mcp import Client
from PIL import Image
from websockets.typing import Subprotocol

from deskpilot.computer.actions import parse_action
from deskpilot.computer.client import AsyncDesktop
from testbed.timing import wait_until
from testbed.xvfb import Display
from tests.integration.desktop.conftest import Desktop, serve
from tests.integration.desktop.test_vnc_bridge import RawRFB

CTRL, L = 0xFFE3, 0x6C


@pytest.fixture(scope="module")
def served(display: Display, desktop_home: Path, files_dir: Path, vnc_port: int) -> Iterator[Desktop]:
    settings: dict[str, Any] = {
        "home": desktop_home,
        "files_dir": files_dir,
        "vnc_port": vnc_port,
        "journal_settle_ms": 100,
    }
    with serve(display, **settings) as desktop:
        yield desktop


def latest(desktop: Desktop) -> int:
    return int(desktop.http.get("/journal", params={"limit": 1}).json()["latest"])


def entries(desktop: Desktop, since: int, **params: Any) -> list[dict[str, Any]]:
    r = desktop.http.get("/journal", params={"since": since, **params})
    assert r.status_code == 200, r.text
    return list(r.json()["entries"])


def framed(desktop: Desktop, since: int, actor: str) -> dict[str, Any]:
    """The newest entry of ``actor`` after ``since``, once its frame is there."""

    def ready() -> dict[str, Any] | None:
        mine = [e for e in entries(desktop, since) if e["actor"] == actor and e["input"]]
        return mine[-1] if mine and mine[-1]["frameAfter"] else None

    return wait_until(ready, 10, what=f"{actor}'s entry with its frame")


def test_an_api_clients_action_is_recorded_with_the_frame_after_it(served: Desktop) -> None:
    since = latest(served)
    served.act(action="move_mouse", coordinates={"x": 123, "y": 45})
    entry = framed(served, since, "api")
    assert entry["action"]["action"] == "move_mouse"
    assert entry["action"]["coordinates"] == {"x": 123, "y": 45}
    assert entry["outcome"] == {"ok": True} and entry["task"] is None
    assert entry["time"].endswith("Z")
    png = served.http.get(f"/journal/frames/{entry['frameAfter']}")
    assert png.status_code == 200 and png.headers["content-type"] == "image/png"
    assert Image.open(io.BytesIO(png.content)).size == (1920, 1080)
    assert hashlib.sha256(png.content).hexdigest()[:32] == entry["frameAfter"]


def test_the_agent_is_recorded_with_its_task_and_the_frame_it_got_back(served: Desktop) -> None:
    since = latest(served)

    async def act() -> dict[str, Any]:
        async with AsyncDesktop(served.url) as desktop:
            agent = desktop.acting_for("task-42")
            click = {"coordinates": {"x": 5, "y": 1070}, "button": "left", "clickCount": 1}
            return await agent.action("click_mouse", **click, screenshot={"width": 640})

    body = asyncio.run(act())
    entry = framed(served, since, "agent")
    assert entry["task"] == "task-42" and entry["action"]["action"] == "click_mouse"
    image = pybase64.b64decode(body["data"]["image"])
    assert entry["frameAfter"] == hashlib.sha256(image).hexdigest()[:32]  # the answer's frame, not another


def test_an_mcp_clients_action_is_recorded_as_mcp(served: Desktop) -> None:
    since = latest(served)

    async def call() -> None:
        async with Client(f"{served.url}/mcp") as client:
            result = await client.call_tool("computer_move_mouse", {"coordinates": {"x": 300, "y": 301}})
            assert not result.is_error

    asyncio.run(call())
    entry = framed(served, since, "mcp")
    assert entry["action"]["coordinates"] == {"x": 300, "y": 301}


def test_bytebots_prefix_is_an_api_client_and_reads_are_marked(served: Desktop) -> None:
    since = latest(served)
    r = served.http.post("/compat/bytebot/computer-use", json={"action": "cursor_position"})
    assert r.status_code == 201
    served.post(action="read_file", path="no-such-file.txt")
    served.act(action="write_file", path="journal.txt", data=pybase64.b64encode(b"secret").decode())
    cursor, missing, written = entries(served, since)
    assert cursor["actor"] == "api" and cursor["input"] is False and cursor["frameAfter"] is None
    assert missing["outcome"]["ok"] is False and missing["outcome"]["status"] == 404
    assert "does not exist" in missing["outcome"]["error"]
    assert "data" not in written["action"] and written["action"]["dataBytes"] == 6


def test_filters_pages_and_refusals(served: Desktop) -> None:
    since = latest(served)
    for x in (10, 20, 30):
        served.act(action="move_mouse", coordinates={"x": x, "y": 10})
    first = served.http.get("/journal", params={"since": since, "limit": 2}).json()
    assert [e["action"]["coordinates"]["x"] for e in first["entries"]] == [10, 20]
    rest = entries(served, first["next"])
    assert [e["action"]["coordinates"]["x"] for e in rest] == [30]
    assert entries(served, since, actor="human,mcp") == []
    for params in ({"since": -1}, {"limit": 0}, {"limit": "many"}, {"actor": "robot"}):
        r = served.http.get("/journal", params=params)
        assert r.status_code == 400 and r.json()["success"] is False, r.text
        assert next(iter(params)) in r.json()["error"]
    for frame in ("0" * 32, "not-a-frame"):
        r = served.http.get(f"/journal/frames/{frame}")
        assert r.status_code == 404 and r.json()["success"] is False
    for header in ({"X-Deskpilot-Actor": "human"}, {"X-Deskpilot-Task": "a b"}):
        r = served.http.post("/computer-use", json={"action": "cursor_position"}, headers=header)
        assert r.status_code == 400 and "X-Deskpilot" in r.json()["error"]


def test_the_journal_is_bounded(display: Display, desktop_home: Path, files_dir: Path) -> None:
    caps: dict[str, Any] = {"journal_entries": 3, "journal_frames": 2, "journal_frame_bytes": 1 << 20}
    with serve(display, home=desktop_home, files_dir=files_dir, **caps) as desktop:
        for width in range(100, 106):  # each answer a frame of its own size: six frames
            desktop.act(action="move_mouse", coordinates={"x": width, "y": 5}, screenshot={"width": width})

        def stored() -> dict[str, Any] | None:
            page: dict[str, Any] = desktop.http.get("/journal").json()
            return page if page["entries"][-1]["frameAfter"] else None

        page = wait_until(stored, 10, what="the last frame stored")
        assert [e["seq"] for e in page["entries"]] == [4, 5, 6] and page["oldest"] == 4
        assert page["frames"]["bytes"] <= 1 << 20
        kept = [desktop.http.get(f"/journal/frames/{e['frameAfter']}").status_code for e in page["entries"]]
        assert kept == [404, 200, 200]  # the oldest frame was evicted


# ------------------------------------------------------------------------------------------- the human


def human_session(desktop: Desktop, script: Any) -> None:
    async def run() -> None:
        uri = desktop.url.replace("http", "ws") + "/vnc/websockify?interactive=1"
        async with websockets.connect(uri, subprotocols=[Subprotocol("binary")]) as ws:
            client = RawRFB(ws)
            await client.handshake()
            await script(client)
            await client.sync()  # x11vnc has acted on all of it

    asyncio.run(run())


def test_a_humans_click_typing_and_ctrl_l_are_recorded_as_actions(served: Desktop) -> None:
    since = latest(served)

    async def script(client: RawRFB) -> None:
        await client.pointer(321, 234)
        await client.pointer(321, 234, 1)
        await client.pointer(321, 234, 0)
        await asyncio.sleep(0.5)  # past the double-click time: a click of its own
        for char in "hey":
            await client.key(ord(char), True)
            await client.key(ord(char), False)
        await client.key(CTRL, True)
        await client.key(L, True)
        await client.key(L, False)
        await client.key(CTRL, False)

    human_session(served, script)
    assert served.x.pointer() == (321, 234)  # forwarded to the desktop as it came
    recorded = [e for e in entries(served, since) if e["actor"] == "human"]
    assert [e["action"] for e in recorded] == [
        {"action": "click_mouse", "coordinates": {"x": 321, "y": 234}, "button": "left", "clickCount": 1},
        {"action": "type_text", "text": "hey"},
        {"action": "press_keys", "keys": ["ctrl", "l"], "press": "down"},
        {"action": "press_keys", "keys": ["ctrl", "l"], "press": "up"},
    ]
    for entry in recorded:
        parse_action(entry["action"])
    assert framed(served, since, "human")["frameAfter"]


def test_a_view_only_connection_records_nothing(served: Desktop) -> None:
    since = latest(served)

    async def run() -> None:
        uri = served.url.replace("http", "ws") + "/vnc/websockify"
        async with websockets.connect(uri, subprotocols=[Subprotocol("binary")]) as ws:
            client = RawRFB(ws)
            await client.handshake()
            await client.pointer(50, 60, 1)
            await client.pointer(50, 60, 0)
            await client.sync()

    asyncio.run(run())
    assert [e for e in entries(served, since) if e["actor"] == "human"] == []
