"""Every action through the generated client, blocking and asyncio, against a real appliance (a native
sandbox): what the method returns, and what it did on the desktop."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from deskpilot.client import Sandbox
from deskpilot.computer.actions import ACTION_MODELS
from deskpilot.computer.client import Desktop, DesktopClientError
from tests.integration.client.conftest import Driver

COVERED: set[tuple[str, str]] = set()  # actions the tests below called, checked against the models at the end


@pytest.fixture(params=["sync", "async"])
def desk(request: pytest.FixtureRequest, clean: Sandbox) -> Iterator[Driver]:
    sync = request.param == "sync"
    with Driver(
        Desktop(clean.desktop_url, clean.token) if sync else clean.async_desktop(), COVERED
    ) as driver:
        yield driver


def eventually(read: Callable[[], Any], want: Any, timeout: float = 20) -> None:
    deadline = time.monotonic() + timeout
    while True:
        try:
            if (got := read()) == want:
                return
        except DesktopClientError as exc:
            got = exc
        if time.monotonic() > deadline:
            raise AssertionError(f"still {got!r}, not {want!r}")
        time.sleep(0.1)


def test_the_pointer_actions(desk: Driver) -> None:
    assert desk.move_mouse((100, 200)) is None
    assert desk.cursor_position() == (100, 200)
    desk.trace_mouse([(10, 10), {"x": 50, "y": 60}], hold_keys=["shift"])
    assert desk.cursor_position() == (50, 60)
    desk.click_mouse((300, 300), click_count=2)
    assert desk.cursor_position() == (300, 300)
    desk.press_mouse("down", (400, 400))
    desk.press_mouse("up")
    desk.drag_mouse([(500, 500), (600, 620)])
    assert desk.cursor_position() == (600, 620)
    desk.scroll("down", (700, 700), scroll_count=2)
    point = desk.cursor_position()
    assert (point.x, point.y) == (700, 700)


def test_the_keyboard_actions_type_into_a_terminal(desk: Driver) -> None:
    desk.application("terminal")
    desk.press_keys(["shift"], "down")
    desk.press_keys(["shift"], "up")
    desk.type_text("echo typed > ~/Desktop/typed.txt\n")
    desk.paste_text("echo pasted > ~/Desktop/pasted.txt")
    desk.type_keys(["Return"])
    eventually(lambda: desk.read_file("typed.txt").text, "typed\n")
    eventually(lambda: desk.read_file("pasted.txt").text, "pasted\n")
    desk.application("desktop")


def test_the_accessibility_tree_holds_the_terminal(desk: Driver) -> None:
    """The appliance's AT-SPI bus answers for the session's applications (the tree itself:
    tests/integration/desktop/test_accessibility*.py)."""
    desk.application("terminal")
    tree = desk.accessibility()
    nodes, roles = [tree["root"]], set()
    while nodes:
        node = nodes.pop()
        roles.add(node["role"])
        nodes += node["children"]
    assert "terminal" in roles, roles
    desk.application("desktop")


def test_screenshots_are_bytes_with_their_size(desk: Driver) -> None:
    shot = desk.screenshot()
    assert shot[:8] == b"\x89PNG\r\n\x1a\n" and shot.size == (1920, 1080) and shot.media_type == "image/png"
    small = desk.screenshot(width=640, format="jpeg", quality=50)
    assert small.size == (640, 360) and small.media_type == "image/jpeg" and small.image().size == (640, 360)
    started = time.monotonic()
    desk.wait(200)
    assert time.monotonic() - started >= 0.2


def test_files_are_bytes_or_text(desk: Driver) -> None:
    data = bytes(range(256))
    assert "written" in desk.write_file("sub/blob.bin", data)
    blob = desk.read_file("sub/blob.bin")
    assert blob == data and blob.name == "blob.bin"
    desk.write_file("~/Documents/é.txt", "héllo")
    assert desk.read_file("~/Documents/é.txt").text == "héllo"
    with pytest.raises(DesktopClientError) as conflict:
        desk.write_file("sub/blob.bin", b"", overwrite=False)
    assert conflict.value.status == 409 and "exists" in conflict.value.detail
    with pytest.raises(DesktopClientError) as missing:
        desk.read_file("no-such-file.txt")
    assert missing.value.status == 404 and "no-such-file.txt" in missing.value.detail


def test_a_client_without_the_token_is_refused(clean: Sandbox) -> None:
    with Desktop(clean.desktop_url) as stranger, pytest.raises(DesktopClientError) as caught:
        stranger.cursor_position()
    assert caught.value.status == 401 and "Bearer" in caught.value.detail


def test_every_action_was_called_both_ways() -> None:
    assert {(mode, a) for mode in ("sync", "async") for a in ACTION_MODELS} <= COVERED
