"""POST /computer-use refuses a body larger than a write_file of a file at the limit, before holding it."""

from __future__ import annotations

import base64
import json
import os
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest

from deskpilot.desktop.files import max_request_bytes
from testbed.desktop_process import desktop_process, peak_rss
from testbed.net import send_head
from testbed.xvfb import Display
from tests.integration.desktop.conftest import MAX_FILE_BYTES, Desktop

ROOT = Path(__file__).resolve().parents[3]
MiB = 1 << 20


def assert_too_large(status: int, body: dict) -> None:
    assert status == 413, body
    assert body["success"] is False and "larger than" in body["error"] and body["message"] == body["error"]


def test_an_oversize_content_length_is_refused_before_the_body_is_sent(desktop: Desktop) -> None:
    size = max_request_bytes(MAX_FILE_BYTES) + 1
    status, body = send_head(
        desktop.url,
        f"POST /computer-use HTTP/1.1\nHost: 127.0.0.1\nContent-Type: application/json\n"
        f"Content-Length: {size}\n",
    )
    assert_too_large(status, json.loads(body))


def test_a_body_at_the_limit_is_read(desktop: Desktop) -> None:
    """The limit leaves room for a file at DESKTOP_MAX_FILE_BYTES and the JSON around it."""
    name = f"deskpilot-test-{os.urandom(4).hex()}.bin"
    data = base64.b64encode(bytes(MAX_FILE_BYTES)).decode()
    try:
        r = desktop.post(action="write_file", path=name, data=data)
        assert r.status_code == 200, r.text
        assert (desktop.controller.hands.root / name).stat().st_size == MAX_FILE_BYTES
    finally:
        (desktop.controller.hands.root / name).unlink(missing_ok=True)


@pytest.fixture
def service(display: Display, desktop_home: Path, files_dir: Path) -> Iterator[tuple[str, int]]:
    """The desktop service in a process of its own (its memory is measured), files limited to 1 MiB."""
    files = {"DESKTOP_HOME": str(desktop_home), "DESKTOP_FILES_DIR": str(files_dir)}
    with desktop_process(display, **files, DESKTOP_MAX_FILE_BYTES=str(MAX_FILE_BYTES)) as (url, pid):
        yield url, pid


def test_chunked_oversize_bodies_are_cut_off_without_being_held(service) -> None:
    url, pid = service
    size = 200 * MiB  # three of them at once took a service without the limit past 1.4 GiB

    def body() -> Iterator[bytes]:
        yield b'{"action": "write_file", "path": "big.bin", "data": "'
        chunk = b"A" * MiB
        for _ in range(size // MiB):
            yield chunk

    def post(_: int) -> httpx.Response:
        with httpx.Client(timeout=60) as client:
            return client.post(
                f"{url}/computer-use", content=body(), headers={"Content-Type": "application/json"}
            )

    before = peak_rss(pid)
    with ThreadPoolExecutor(3) as pool:
        answers = list(pool.map(post, range(3)))
    for r in answers:
        assert "content-length" not in r.request.headers  # the bodies were sent chunked
        assert_too_large(r.status_code, r.json())
    grown = peak_rss(pid) - before
    assert grown < 48 * MiB, f"the service's peak memory grew by {grown / MiB:.0f} MiB"
