"""The proxy forwards only paths that name one resource, and of the desktop only its live view.

Behind the UI, two recording upstreams (testbed/recorder.py) stand for the agent and the desktop: a
refused path must answer 404 and reach neither. Requests go out through http.client, which sends a path
byte for byte (an HTTP library would normalise the dot segments away before the proxy ever saw them).
"""

from __future__ import annotations

import asyncio
import http.client
import json
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
import websockets
from websockets.exceptions import InvalidStatus

from deskpilot.config import UISettings
from deskpilot.ui.server import create_app
from testbed.net import ServerThread
from testbed.recorder import Recorder

WRITE_FILE = json.dumps({"action": "write_file", "path": "/tmp/pwned", "data": "eA=="})


@dataclass
class Stack:
    port: int
    agent: Recorder
    desktop: Recorder

    def request(self, method: str, path: str, body: str | None = None) -> tuple[int, bytes]:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
        headers = {"Content-Type": "application/json"} if body is not None else {}
        conn.request(method, path, body=body, headers=headers)
        response = conn.getresponse()
        out = response.status, response.read()
        conn.close()
        return out

    def reached(self) -> list[str]:
        return self.agent.paths() + self.desktop.paths()


@pytest.fixture(scope="module")
def stack() -> Iterator[Stack]:
    agent, desktop = Recorder(), Recorder()
    with ServerThread(agent) as a, ServerThread(desktop) as d:
        settings = UISettings(tasks_url=a.url, desktop_url=d.url)
        with ServerThread(create_app(settings)) as ui:
            yield Stack(ui.port, agent, desktop)


@pytest.fixture(autouse=True)
def fresh(stack: Stack) -> None:
    stack.agent.seen.clear()
    stack.desktop.seen.clear()


TRAVERSALS = [
    "/vnc/..%2Fcomputer-use",
    "/vnc/..%2fcomputer-use",
    "/vnc/%2e%2e/computer-use",
    "/vnc/%2E%2E%2Fcomputer-use",
    "/vnc/.%2e/computer-use",
    "/vnc/%2e./computer-use",
    "/vnc/..%5Ccomputer-use",
    "/vnc/..%5ccomputer-use",
    "/vnc/..\\computer-use",
    "/vnc/%252e%252e%252fcomputer-use",  # double encoded
    "/vnc/..%252Fcomputer-use",
    "/vnc/../computer-use",
    "/vnc/./../computer-use",
    "/vnc/core/..%2F..%2Fcomputer-use",
    "/vnc%2F..%2Fcomputer-use",
    "/vnc/%2F%2Fcomputer-use",
    "/vnc//computer-use",
    "/vnc/..%00/computer-use",
    "/vnc/%c0%ae%c0%ae/computer-use",  # overlong UTF-8 dots
    "/vnc/..%2F..%2Fmcp",
    "/vnc/..;/computer-use",
    "/api/..%2Fvnc/..%2Fcomputer-use",
    "/api/../computer-use",
    "/api/tasks/..%2F..%2Fcomputer-use",
    "/api/%2e%2e/computer-use",
]


@pytest.mark.parametrize("path", TRAVERSALS)
def test_encoded_traversal_answers_404_and_reaches_no_upstream(stack: Stack, path: str) -> None:
    for method, body in (("POST", WRITE_FILE), ("GET", None)):
        status, answer = stack.request(method, path, body)
        assert status == 404, (method, path, status, answer)
    assert stack.reached() == []


@pytest.mark.parametrize(
    "path",
    ["/vnc/..%2Fwebsockify", "/vnc/core/rfb.js", "/vnc/%2e%2e/mcp", "/vnc/../ws", "/api/..%2Fvnc/websockify"],
)
def test_websockets_only_reach_the_bridge(stack: Stack, path: str) -> None:
    async def open_it() -> int:
        uri = f"ws://127.0.0.1:{stack.port}{path}"
        with pytest.raises(InvalidStatus) as refused:
            async with websockets.connect(uri):
                pass
        return refused.value.response.status_code

    assert asyncio.run(open_it()) == 404
    assert stack.reached() == []


@pytest.mark.parametrize(
    "path", ["/vnc", "/vnc/", "/vnc/core/rfb.js", "/vnc/app/images/icons/novnc-16x16.png"]
)
def test_novncs_files_reach_the_desktop_as_sent(stack: Stack, path: str) -> None:
    status, answer = stack.request("GET", path + "?interactive=1")
    assert status == 200, answer
    assert [(s.raw_path, s.query) for s in stack.desktop.seen] == [(path, "interactive=1")]
    assert stack.agent.seen == []


def test_the_desktop_is_only_read_through_the_ui(stack: Stack) -> None:
    status, _ = stack.request("POST", "/vnc/vnc.html", WRITE_FILE)
    assert status == 405
    assert stack.reached() == []


def test_agent_paths_reach_the_agent_still_encoded(stack: Stack) -> None:
    status, _ = stack.request("GET", "/api/tasks/a%20b/messages?offset=2")
    assert status == 200
    assert [(s.raw_path, s.query) for s in stack.agent.seen] == [("/tasks/a%20b/messages", "offset=2")]


def test_the_bridge_and_the_event_socket_are_relayed(stack: Stack) -> None:
    async def open_both() -> list[str]:
        out = []
        for path in ("/vnc/websockify?interactive=1", "/api/ws?taskId=1"):
            async with websockets.connect(f"ws://127.0.0.1:{stack.port}{path}") as ws:
                out.append(json.loads(await asyncio.wait_for(ws.recv(), 5))["path"])
        return out

    assert asyncio.run(open_both()) == ["/vnc/websockify", "/ws"]
    assert [s.query for s in stack.desktop.seen] == ["interactive=1"]
