"""Large request bodies are read and handled within DESKTOP_BODY_BUDGET_BYTES: one past it waits its turn (or,
past DESKTOP_BODY_WAIT, is refused with a 503 and Retry-After) while small requests pass; and six concurrent
big writes take the service's memory no higher than one alone."""

from __future__ import annotations

import base64
import json
import os
import socket
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import pytest

from deskpilot.config import DesktopSettings
from deskpilot.desktop.api import create_app
from deskpilot.desktop.body import SMALL_BODY, BodyBudget
from testbed.desktop_files import private_files_dir
from testbed.desktop_process import desktop_process, peak_rss
from testbed.net import ServerThread
from testbed.security import security
from testbed.timing import wait_until
from testbed.xvfb import Display
from tests.integration.desktop.conftest import MAX_FILE_BYTES

ROOT = Path(__file__).resolve().parents[3]
MiB = 1 << 20
CONTENT = os.urandom(900 << 10)  # its write_file body (1.2 MB) is past SMALL_BODY; two are past the budget


def write_body(path: str, content: bytes = CONTENT) -> bytes:
    return json.dumps(
        {"action": "write_file", "path": path, "data": base64.b64encode(content).decode()}
    ).encode()


@dataclass
class Budgeted:
    url: str
    files: Path
    budget: BodyBudget


@pytest.fixture(scope="module")
def budgeted(display: Display, desktop_home: Path) -> Iterator[Budgeted]:
    """A desktop service whose budget holds one of the tests' large writes at a time."""
    with private_files_dir() as files:
        settings = DesktopSettings(
            display=display.name,
            home=desktop_home,
            files_dir=files,
            max_file_bytes=MAX_FILE_BYTES,
            body_budget_bytes=2 * MiB,
            body_wait=0.5,
        )
        app = create_app(settings, security=security())
        with ServerThread(app) as server:
            yield Budgeted(server.url, files, app.state.bodies)


def answer(sock: socket.socket) -> tuple[int, dict[str, str], bytes]:
    """The next response on ``sock``: status, headers (lowercase names), body (by its Content-Length)."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        assert chunk, f"the connection closed: {data!r}"
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.decode().split("\r\n")
    headers = {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:])}
    while len(body) < int(headers.get("content-length", 0)):
        body += sock.recv(65536)
    return int(lines[0].split()[1]), headers, body


class Held:
    """A write whose body is promised (``Expect: 100-continue``) and held back: the service says 100 Continue
    once the body's turn in the budget has come, and the share stays taken until ``finish`` sends it."""

    def __init__(self, url: str, body: bytes, *, expect_turn: bool = True) -> None:
        parts = urlsplit(url)
        assert parts.hostname and parts.port
        self.sock = socket.create_connection((parts.hostname, parts.port), timeout=30)
        self.body = body
        head = (
            "POST /computer-use HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\nExpect: 100-continue\r\n\r\n"
        )
        self.sock.sendall(head.encode())
        if expect_turn:
            status, _, _ = answer(self.sock)
            assert status == 100

    def finish(self) -> tuple[int, dict[str, str], dict]:
        with self.sock:
            self.sock.sendall(self.body)
            status, headers, body = answer(self.sock)
        return status, headers, json.loads(body)

    def refused(self) -> tuple[int, dict[str, str], dict]:
        """The answer to a request whose body was never sent."""
        with self.sock:
            status, headers, body = answer(self.sock)
        return status, headers, json.loads(body)


def test_a_large_body_past_the_budget_is_refused_after_its_wait_while_small_ones_pass(
    budgeted: Budgeted,
) -> None:
    held = Held(budgeted.url, write_body("held.bin"))
    try:
        status, headers, body = Held(budgeted.url, write_body("late.bin"), expect_turn=False).refused()
        assert status == 503 and headers["retry-after"] == "5", body
        assert body["success"] is False and body["message"] == body["error"]
        assert "DESKTOP_BODY_BUDGET_BYTES" in body["error"] and "waited 0.5 s" in body["error"]
        with httpx.Client(base_url=budgeted.url, timeout=30) as http:
            small = {"action": "write_file", "path": "small.txt", "data": "aGVsbG8K"}
            assert http.post("/computer-use", json=small).status_code == 200
            assert http.post("/computer-use", json={"action": "cursor_position"}).status_code == 200
    finally:
        status, _, body = held.finish()
    assert status == 200, body
    assert (budgeted.files / "held.bin").read_bytes() == CONTENT
    assert not (budgeted.files / "late.bin").exists()
    wait_until(lambda: budgeted.budget.held == 0, 10, what="the held body's share given back")
    with httpx.Client(base_url=budgeted.url, timeout=30) as http:
        late = http.post(
            "/computer-use", content=write_body("late.bin"), headers={"Content-Type": "application/json"}
        )
    assert late.status_code == 200, late.text
    assert (budgeted.files / "late.bin").read_bytes() == CONTENT


def test_a_large_body_past_the_budget_waits_its_turn(budgeted: Budgeted) -> None:
    budgeted.budget.wait = 60
    try:
        first = Held(budgeted.url, write_body("first.bin"))
        with ThreadPoolExecutor(1) as pool:
            second = pool.submit(Held, budgeted.url, write_body("second.bin"))
            wait_until(lambda: budgeted.budget.waiting == 1, 10, what="the second body waiting")
            assert not second.done()  # no 100 Continue: its body is not read while the first is held
            assert first.finish()[0] == 200
            assert second.result(30).finish()[0] == 200
    finally:
        budgeted.budget.wait = 0.5
    assert (budgeted.files / "second.bin").read_bytes() == CONTENT


def test_a_chunked_body_takes_its_share_once_past_one_mib(budgeted: Budgeted) -> None:
    held = Held(budgeted.url, write_body("held-2.bin"))
    try:
        parts = urlsplit(budgeted.url)
        assert parts.hostname and parts.port
        body = write_body("chunked.bin")
        with socket.create_connection((parts.hostname, parts.port), timeout=30) as sock:
            sock.sendall(
                b"POST /computer-use HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                b"Transfer-Encoding: chunked\r\n\r\n"
                + f"{SMALL_BODY + 1:x}\r\n".encode()
                + body[: SMALL_BODY + 1]
                + b"\r\n"
            )
            status, headers, answered = answer(sock)
        assert status == 503 and headers["retry-after"] == "5", answered
    finally:
        assert held.finish()[0] == 200
    with httpx.Client(base_url=budgeted.url, timeout=30) as http:

        def chunks() -> Iterator[bytes]:
            yield from (body[i : i + 65536] for i in range(0, len(body), 65536))

        r = http.post("/computer-use", content=chunks(), headers={"Content-Type": "application/json"})
    assert "content-length" not in r.request.headers and r.status_code == 200, r.text
    assert (budgeted.files / "chunked.bin").read_bytes() == CONTENT


# ------------------------------------------------------------------------------------ memory, measured


@pytest.fixture
def big_files_service(display: Display, desktop_home: Path) -> Iterator[tuple[str, int, Path]]:
    """The desktop service in a process of its own (its memory is measured): files up to 24 MiB, a budget
    of 40 MiB (one such write's body, 32 MiB, at a time)."""
    with private_files_dir() as files:
        settings = {"DESKTOP_HOME": str(desktop_home), "DESKTOP_FILES_DIR": str(files)}
        limits = {"DESKTOP_MAX_FILE_BYTES": str(24 * MiB), "DESKTOP_BODY_BUDGET_BYTES": str(40 * MiB)}
        with desktop_process(display, **settings, **limits) as (url, pid):
            yield url, pid, files


def test_six_concurrent_big_writes_take_no_more_memory_than_one(big_files_service) -> None:
    url, pid, files = big_files_service
    content = os.urandom(24 * MiB)
    bodies = [write_body(f"big-{i}.bin", content) for i in range(7)]

    def post(body: bytes) -> int:
        with httpx.Client(timeout=120) as http:
            r = http.post(f"{url}/computer-use", content=body, headers={"Content-Type": "application/json"})
            return r.status_code

    idle = peak_rss(pid)
    assert post(bodies[6]) == 200
    one = peak_rss(pid) - idle
    # the body (4/3 of the file) and the file decoded from it, no copy of either (it was 4.5 times the file)
    assert one < 2.6 * len(content), f"one write of 24 MiB took the service {one / MiB:.0f} MiB higher"
    with ThreadPoolExecutor(6) as pool:
        assert list(pool.map(post, bodies[:6])) == [200] * 6
    six = peak_rss(pid) - idle
    assert six < one + 8 * MiB, f"six writes took {six / MiB:.0f} MiB, one alone {one / MiB:.0f} MiB"
    assert all((files / f"big-{i}.bin").stat().st_size == len(content) for i in range(6))
