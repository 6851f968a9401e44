"""The action channel, ``GET /computer-use/ws``, against the real service on the session's Xvfb: every action
answers what ``POST /computer-use`` answers, answers keep their ids and order under concurrent senders, a
message too large is refused with nothing left held, a closed socket lets go of its keys and buttons (read
back from the X server), and the clients use it. Token, Origin and Host: tests/integration/desktop/
test_security.py."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import psutil
import pybase64
import pytest
from websockets.exceptions import ConnectionClosed, InvalidStatus
from websockets.sync.client import connect
from websockets.sync.connection import Connection
from Xlib import X

from deskpilot.computer.client import AsyncDesktop, Desktop
from deskpilot.desktop.channel import MAX_MESSAGE
from testbed.desktop_process import desktop_process
from testbed.timing import wait_until
from testbed.xvfb import Display
from tests.integration.desktop.conftest import Desktop as Served
from tests.integration.desktop.conftest import serve

VOLATILE = ("settledMs",)  # how long a settle waited: a measurement, not an answer


def ws_url(desktop: Served, query: str = "") -> str:
    return ws_url_of(desktop.url, query)


def ws_url_of(url: str, query: str = "") -> str:
    return "ws" + url.removeprefix("http") + "/computer-use/ws" + query


@pytest.fixture
def ws(desktop: Served) -> Iterator[Connection]:
    with connect(ws_url(desktop), max_size=None) as socket:
        yield socket


def over_channel(ws: Connection, body: dict[str, Any], ident: Any = None) -> dict[str, Any]:
    ws.send(json.dumps(body if ident is None else {"id": ident, **body}))
    return json.loads(ws.recv(30))


def over_http(desktop: Served, body: dict[str, Any]) -> dict[str, Any]:
    r = desktop.post(**body)
    return {"status": r.status_code, **r.json()}


def stable(answer: dict[str, Any]) -> dict[str, Any]:
    answer = {k: v for k, v in answer.items() if k not in VOLATILE and k != "id"}
    evidence = answer.get("evidence")
    if isinstance(evidence, dict):  # its timings are measurements too
        answer["evidence"] = {k: v for k, v in evidence.items() if not k.endswith("Ms")}
    return answer


CLICK = {"coordinates": {"x": 1900, "y": 1060}, "button": "left"}
# Every action, each as one request (the screenshot's answers compared on a screen that holds still)
ACTIONS: list[dict[str, Any]] = [
    {"action": "move_mouse", "coordinates": {"x": 1890, "y": 1050}},
    {"action": "trace_mouse", "path": [{"x": 1880, "y": 1040}, {"x": 1890, "y": 1050}]},
    {"action": "click_mouse", **CLICK, "clickCount": 1},
    {"action": "press_mouse", **CLICK, "press": "down"},
    {"action": "press_mouse", **CLICK, "press": "up"},
    {"action": "drag_mouse", "path": [{"x": 1880, "y": 1040}, {"x": 1890, "y": 1050}], "button": "left"},
    {"action": "scroll", "coordinates": {"x": 1890, "y": 1050}, "direction": "down", "scrollCount": 1},
    {"action": "type_keys", "keys": ["Shift_L"]},
    {"action": "press_keys", "keys": ["Shift_L"], "press": "down"},
    {"action": "press_keys", "keys": ["Shift_L"], "press": "up"},
    {"action": "type_text", "text": ""},
    {"action": "paste_text", "text": "channel"},
    {"action": "wait", "duration": 10},
    {"action": "cursor_position"},
    {"action": "screenshot"},
    {"action": "screenshot", "width": 640},
    {"action": "screenshot", "region": {"x": 10, "y": 20, "width": 300, "height": 200}, "format": "jpeg"},
    {"action": "click_mouse", **CLICK, "clickCount": 1, "settle": {"quietMs": 30}, "evidence": True},
    {"action": "write_file", "path": "channel.txt", "data": pybase64.b64encode_as_string(b"both ways")},
    {"action": "read_file", "path": "channel.txt"},
    {"action": "application", "application": "desktop"},
    # and what is refused, in the same shape and status
    {"action": "fly"},
    {"action": "move_mouse", "coordinates": {"x": -1, "y": 5}},
    {"action": "read_file", "path": "no-such-file.txt"},
    {"action": "write_file", "path": "../outside.txt", "data": ""},
]


@pytest.mark.parametrize("body", ACTIONS, ids=lambda b: f"{b['action']}-{'-'.join(sorted(b)[:3])}")
def test_every_action_answers_as_over_http(desktop: Served, ws: Connection, body: dict[str, Any]) -> None:
    for _ in range(3):  # a screen that changed between the two (a caret blinking elsewhere): once more
        http, channel = over_http(desktop, body), over_channel(ws, body)
        if stable(channel) == stable(http):
            break
    assert stable(channel) == stable(http)
    assert set(channel) - {"id"} == set(http)  # the same fields, timing included, and no id sent back


def test_ids_come_back_with_their_answers_in_the_order_sent(ws: Connection) -> None:
    ids: list[Any] = ["a", 7, "x" * 128, -3]
    for ident in ids:
        assert over_channel(ws, {"action": "cursor_position"}, ident)["id"] == ident
    assert over_channel(ws, {"action": "cursor_position"})["id"] is None
    refused = over_channel(ws, {"action": "cursor_position"}, {"no": "objects"})
    assert refused["status"] == 400 and refused["id"] is None and "id:" in refused["error"]
    assert over_channel(ws, {"action": "cursor_position"}, "y" * 129)["status"] == 400
    ws.send("{not json")
    not_json = json.loads(ws.recv(10))
    assert not_json["status"] == 400 and "not valid JSON" in not_json["error"]


def test_eight_concurrent_senders_on_one_socket(desktop: Served) -> None:
    """Answers in the order their messages went out, each with its sender's id and its own result."""
    import websockets

    async def run() -> None:
        sent: list[str] = []
        lock = asyncio.Lock()
        async with websockets.connect(ws_url(desktop), max_size=None) as socket:

            async def sender(n: int) -> None:
                for i in range(25):
                    region = {"x": 0, "y": 0, "width": 40 + n, "height": 40 + i}
                    body: dict[str, Any] = {"id": f"{n}-{i}", "action": "screenshot", "region": region}
                    async with lock:  # the order on the wire is the order of this list
                        sent.append(body["id"])
                        await socket.send(json.dumps(body))

            async def reader() -> list[dict[str, Any]]:
                return [json.loads(await socket.recv()) for _ in range(200)]

            answers, *_ = await asyncio.gather(reader(), *(sender(n) for n in range(8)))
        assert [a["id"] for a in answers] == sent
        for a in answers:
            n, i = map(int, a["id"].split("-"))
            assert a["status"] == 200 and a["data"]["size"] == {"width": 40 + n, "height": 40 + i}, a

    asyncio.run(asyncio.wait_for(run(), 60))


def test_screenshots_as_binary_frames(desktop: Served) -> None:
    with connect(ws_url(desktop, "?frames=binary"), max_size=None) as socket:
        for _ in range(3):
            head = over_channel(socket, {"action": "screenshot", "width": 800}, 1)
            image = socket.recv(10)
            http = over_http(desktop, {"action": "screenshot", "width": 800})
            if pybase64.b64decode(http["data"]["image"]) == image:
                break
        assert isinstance(image, bytes) and pybase64.b64decode(http["data"]["image"]) == image
        assert head["data"].pop("imageBytes") == len(image) and "image" not in head["data"]
        http["data"].pop("image")
        assert stable(head) == stable(http)
        assert over_channel(socket, {"action": "cursor_position"}, 2)["data"].keys() == {"x", "y"}


def test_bad_connection_parameters_are_refused_before_the_upgrade(desktop: Served) -> None:
    for url, headers in (
        (ws_url(desktop, "?frames=jpeg"), {}),
        (ws_url(desktop), {"X-Deskpilot-Actor": "someone"}),
    ):
        with pytest.raises(InvalidStatus) as refused:
            connect(url, additional_headers=headers)
        assert refused.value.response.status_code == 400
        assert json.loads(refused.value.response.body or b"")["success"] is False


def test_the_journal_names_the_sender_as_for_http(desktop: Served) -> None:
    since = int(desktop.http.get(f"{desktop.url}/journal", params={"limit": 1}).json()["latest"])
    agent = {"X-Deskpilot-Actor": "agent", "X-Deskpilot-Task": "task-7"}
    with connect(ws_url(desktop), additional_headers=agent) as socket:
        over_channel(socket, {"action": "cursor_position"})
    with connect(ws_url(desktop)) as socket:
        over_channel(socket, {"action": "move_mouse", "coordinates": {"x": 5, "y": 6}})
    page = desktop.http.get(f"{desktop.url}/journal", params={"since": since}).json()["entries"]
    assert [(e["actor"], e["task"], e["action"]["action"]) for e in page] == [
        ("agent", "task-7", "cursor_position"),
        ("api", None, "move_mouse"),
    ]


def pointer_buttons(desktop: Served) -> int:
    mask = desktop.x.root.query_pointer().mask
    return int(mask & (X.Button1Mask | X.Button2Mask | X.Button3Mask))


def test_a_closed_socket_releases_what_it_held(desktop: Served) -> None:
    with connect(ws_url(desktop)) as socket:
        over_channel(socket, {"action": "press_keys", "keys": ["Shift_L", "Control_L"], "press": "down"})
        over_channel(socket, {"action": "press_mouse", **CLICK, "press": "down"})
        assert len(desktop.x.keys_down()) == 2 and pointer_buttons(desktop)
    wait_until(lambda: not desktop.x.keys_down() and not pointer_buttons(desktop), 10, what="release")


def test_a_message_too_large_closes_the_socket_with_nothing_held(desktop: Served) -> None:
    with connect(ws_url(desktop), max_size=None) as socket:
        over_channel(socket, {"action": "press_keys", "keys": ["Shift_L"], "press": "down"})
        socket.send(json.dumps({"action": "type_text", "text": "a" * MAX_MESSAGE}))
        with pytest.raises(ConnectionClosed):
            socket.recv(10)
        assert socket.close_code == 1009 and "by HTTP" in (socket.close_reason or "")
    wait_until(lambda: not desktop.x.keys_down(), 10, what="release")
    with connect(ws_url(desktop)) as socket:  # the service goes on
        assert over_channel(socket, {"action": "cursor_position"})["status"] == 200


def test_a_reader_that_stops_reading_stops_the_socket_not_the_service(display: Display) -> None:
    """200 full screenshots asked for and none read, from the service in a process of its own as the
    appliance runs it: its memory stays bounded, it answers others at once, and every answer comes once
    the reader reads."""
    with desktop_process(display) as (url, pid), connect(ws_url_of(url), max_size=None) as greedy:
        service = psutil.Process(pid)
        greedy.send(json.dumps({"action": "screenshot"}))
        assert json.loads(greedy.recv(30))["status"] == 200
        before = service.memory_info().rss
        for i in range(200):
            greedy.send(json.dumps({"id": i, "action": "screenshot"}))
        time.sleep(2)  # what it would buffer, it has by now
        grown = (service.memory_info().rss - before) / 2**20
        started = time.monotonic()
        assert httpx.post(f"{url}/computer-use", json={"action": "cursor_position"}).status_code == 200
        assert time.monotonic() - started < 2
        assert grown < 48, f"the service grew by {grown:.0f} MiB for a reader that does not read"
        assert [json.loads(greedy.recv(30))["id"] for _ in range(200)] == list(range(200))


def test_an_action_too_large_for_a_message_goes_by_http(display: Display, files_dir: Path) -> None:
    with (
        serve(display, files_dir=files_dir, max_file_bytes=2 * MAX_MESSAGE) as desktop,
        Desktop(desktop.url) as client,
    ):
        assert client.write_file("channel-big.bin", b"x" * MAX_MESSAGE)
        assert client.read_file("channel-big.bin") == b"x" * MAX_MESSAGE  # its answer: by the channel
    (files_dir / "channel-big.bin").unlink()


def test_the_clients_speak_over_the_channel_and_answer_as_over_http(desktop: Served) -> None:
    with Desktop(desktop.url) as client:
        shot = client.screenshot(width=320)
        assert client._channel is not None and client._channel._ws is not None  # the socket is open
        assert shot.width == 320 and shot[:8] == b"\x89PNG\r\n\x1a\n"
        raw = client.action("screenshot", width=320)  # the raw body: the HTTP shape, image in base64
        assert isinstance(raw["data"]["image"], str) and raw["data"]["size"]["width"] == 320
    with Desktop(desktop.url, channel=False) as http:
        assert http._channel is None and http.screenshot(width=320).width == 320

    async def concurrently() -> None:
        async with AsyncDesktop(desktop.url) as client:
            sizes = await asyncio.gather(
                *(client.screenshot(region={"x": 0, "y": 0, "width": 40 + n, "height": 40}) for n in range(8))
            )
            assert [s.width for s in sizes] == [40 + n for n in range(8)]
            assert client._channel is not None and client._channel._ws is not None

    asyncio.run(asyncio.wait_for(concurrently(), 30))
