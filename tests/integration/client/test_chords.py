"""The calls people expect beyond one method per action, blocking and asyncio, on a real appliance: a chord
(``hotkey("ctrl", "c")`` interrupts a terminal's command) and the clipboard's text."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from deskpilot.client import Sandbox
from deskpilot.computer.client import Desktop, DesktopClientError
from tests.integration.client.conftest import Driver


@pytest.fixture(params=["sync", "async"])
def desk(request: pytest.FixtureRequest, clean: Sandbox) -> Iterator[Driver]:
    client = Desktop(clean.desktop_url, clean.token) if request.param == "sync" else clean.async_desktop()
    with Driver(client, set()) as driver:
        yield driver


def test_a_chord_interrupts_a_command_in_the_terminal(desk: Driver) -> None:
    desk.application("terminal")
    desk.type_text("sleep 600; echo slept > ~/Desktop/slept.txt\n")
    time.sleep(0.5)  # the shell runs it
    desk.hotkey("ctrl", "c")
    desk.type_text("echo interrupted > ~/Desktop/chord.txt\n")  # runs only once the sleep is gone
    deadline = time.monotonic() + 20
    while True:
        try:
            # the shell's redirection creates the file before echo writes it: an empty read is "not yet"
            written: str | None = desk.read_file("chord.txt").text
        except DesktopClientError:
            written = None
        if written == "interrupted\n":
            break
        assert time.monotonic() < deadline, f"no ctrl+c: the terminal still runs the command ({written!r})"
        time.sleep(0.1)
    with pytest.raises(DesktopClientError):
        desk.read_file("slept.txt")
    with pytest.raises(DesktopClientError) as bad:
        desk.hotkey("ctrl", "no-such-key")  # refused before any key goes down
    assert bad.value.status == 400


def test_the_clipboard_reads_what_was_put_on_it(desk: Driver) -> None:
    text = f"ticket-4711 ({desk.mode}) ünïcode"
    desk.paste_text(text)
    assert desk.clipboard() == text
