"""The X edge: a display that is not ours is refused, the desktop's own slowness is a 504 that drops nothing,
a keymap with no spare keycode is the client's 400. Each on a private Xvfb set up for the case."""

from __future__ import annotations

import logging
import os
import pwd
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from Xlib import XK
from Xlib import display as xdisplay

from deskpilot.config import DesktopSettings
from deskpilot.desktop.connections import requirements
from deskpilot.desktop.watchdog import bounded
from deskpilot.desktop.x11.connection import XConnection
from deskpilot.errors import ActionTimedOut
from testbed.xvfb import Display, start_xvfb
from tests.integration.desktop.conftest import Desktop, serve

DISPLAY_ACTIONS: list[dict[str, Any]] = [
    {"action": "move_mouse", "coordinates": {"x": 10, "y": 10}},
    {"action": "click_mouse", "button": "left", "clickCount": 1},
    {"action": "type_text", "text": "hello"},
    {"action": "paste_text", "text": "hello"},
    {"action": "cursor_position"},
    {"action": "screenshot"},
    {"action": "application", "application": "desktop"},
]


@pytest.fixture
def bare_display() -> Iterator[Display]:
    """A private 1920x1080x24 Xvfb without a window manager."""
    d = start_xvfb()
    yield d
    d.stop()


def connections(desktop: Desktop) -> tuple[object, ...]:
    """The service's open X connections (their identity shows whether they were dropped)."""
    c = desktop.controller.connections
    return (c._input, c._capture, c._clipboard)


@pytest.mark.parametrize(
    ("screen", "named"), [((800, 600, 24), "800x600"), ((1920, 1080, 16), "depth 16")], ids=["size", "depth"]
)
def test_a_display_of_another_size_or_depth_is_refused_once_in_the_log_and_on_every_action(
    screen: tuple[int, int, int], named: str, caplog: pytest.LogCaptureFixture
) -> None:
    d = start_xvfb(*screen)
    try:
        with serve(d) as desktop:
            for body in DISPLAY_ACTIONS * 2:
                r = desktop.post(**body)
                assert r.status_code == 500, (body, r.text)
                assert "Retry-After" not in r.headers
                error = r.json()["error"]
                assert named in error and "1920x1080" in error and "depth 24" in error, error
            health = desktop.http.get("/health")
            assert health.status_code == 503 and health.json()["display"] is False
            assert named in health.json()["problems"]["display"]
    finally:
        d.stop()
    refusals = [r for r in caplog.records if r.levelno == logging.ERROR and named in getattr(r, "error", "")]
    assert len(refusals) == 1, [vars(r) for r in caplog.records if r.levelno == logging.ERROR]


def test_a_display_served_by_another_user_is_refused(bare_display: Display) -> None:
    me = pwd.getpwuid(os.geteuid()).pw_name
    other = "user" if me != "user" else "root"
    with serve(bare_display, display_owner=other) as desktop:
        r = desktop.post(action="move_mouse", coordinates={"x": 10, "y": 10})
        assert r.status_code == 500 and f"runs as {me}" in r.json()["error"] and other in r.json()["error"]
        assert desktop.http.get("/health").status_code == 503
    with serve(bare_display, display_owner=me) as desktop:
        desktop.act(action="move_mouse", coordinates={"x": 10, "y": 10})
        assert desktop.http.get("/health").status_code == 200


def test_the_desktop_not_answering_in_time_is_a_504_that_drops_no_connection(bare_display: Display) -> None:
    with serve(bare_display) as desktop:
        desktop.act(action="move_mouse", coordinates={"x": 10, "y": 10})
        desktop.act(action="screenshot")
        before = connections(desktop)
        started = time.monotonic()
        r = desktop.post(action="application", application="desktop")  # no window manager shows it
        assert r.status_code == 504, r.text
        assert "within 5 s" in r.json()["error"] and "Retry-After" not in r.headers
        assert time.monotonic() - started < 8
        assert connections(desktop) == before


def test_a_clipboard_not_taken_in_time_is_a_504_and_the_event_loop_serves_meanwhile(
    bare_display: Display,
) -> None:
    with serve(bare_display) as desktop:
        desktop.act(action="paste_text", text="opens the clipboard")
        desktop.http.get("/openapi.json")
        before = connections(desktop)
        grabber = xdisplay.Display(bare_display.name)  # while it holds the server, no one else is served
        grabber.grab_server()
        grabber.sync()
        try:
            with ThreadPoolExecutor(1) as pool:
                pending = pool.submit(desktop.post, action="paste_text", text="x")
                time.sleep(0.5)  # the clipboard thread is waiting for the server now
                started = time.monotonic()
                assert desktop.http.get("/openapi.json").status_code == 200
                assert time.monotonic() - started < 0.5, "the event loop was blocked"
                time.sleep(2.0)  # past the clipboard's time-out
                grabber.ungrab_server()
                grabber.sync()
                r = pending.result(timeout=20)
        finally:
            grabber.close()
        assert r.status_code == 504, r.text
        assert "clipboard" in r.json()["error"] and "Retry-After" not in r.headers
        assert connections(desktop) == before
        desktop.act(action="paste_text", text="and again")


def fill_keymap(name: str) -> None:
    """Bind every keycode without a keysym, as a layout with no room to spare would."""
    d = xdisplay.Display(name)
    first, last = d.display.info.min_keycode, d.display.info.max_keycode
    for i, syms in enumerate(d.get_keyboard_mapping(first, last - first + 1)):
        if not any(syms):
            d.change_keyboard_mapping(first + i, [(XK.XK_F35, XK.XK_F35)])
    d.sync()
    d.close()


def test_a_keymap_without_a_spare_keycode_asks_for_paste_text(bare_display: Display) -> None:
    fill_keymap(bare_display.name)
    with serve(bare_display) as desktop:
        for body in ({"action": "type_text", "text": "a美"}, {"action": "type_keys", "keys": ["美"]}):
            r = desktop.http.post("/computer-use", json=body, timeout=10)
            assert r.status_code == 400, r.text
            assert "paste_text" in r.json()["error"], r.text
        desktop.act(action="type_text", text="abc")  # what the layout has still types


def test_a_reply_wait_that_spins_is_cut_by_the_watchdog(bare_display: Display) -> None:
    """The hang once seen in POST /reset: an exception inside python-xlib's receive loop leaves it believing
    another thread reads, and every later reply wait on that connection spins forever. The watchdog cuts it
    at its bound and the connection is marked for replacement."""
    x = XConnection(bare_display.name, requirements(DesktopSettings(display=bare_display.name)))
    wire = x.display.display
    parse = wire.parse_response

    def fail_once(request: int) -> bool:
        wire.parse_response = parse  # type: ignore[method-assign]
        raise RuntimeError("a decode failure inside the receive loop")

    wire.parse_response = fail_once  # type: ignore[method-assign]  # python-xlib's, on this connection only
    with pytest.raises(RuntimeError):
        x.pointer()
    assert wire.recv_active  # left set: no thread will read this connection again
    started = time.monotonic()
    with (
        pytest.raises(ActionTimedOut, match=r"did not answer during the test within 0\.3 s"),
        bounded(x, 0.3, "during the test"),
    ):
        x.release_all()
    assert time.monotonic() - started < 2 and x.severed
    x.close()  # does not touch the locks the cut call may hold


def test_test_displays_keep_clear_of_the_appliances_and_of_each_other() -> None:
    """A test's Xvfb never takes :0 (`make run` may start beside the suite) and two never share a number."""
    first, second = start_xvfb(), start_xvfb()
    try:
        numbers = {int(d.name.lstrip(":")) for d in (first, second)}
        assert len(numbers) == 2 and all(20 <= n < 100 for n in numbers), numbers
    finally:
        first.stop()
        second.stop()


def test_an_error_nobody_waits_for_is_logged_not_printed(
    bare_display: Display, caplog: pytest.LogCaptureFixture, capsys: pytest.CaptureFixture[str]
) -> None:
    """python-xlib's default prints it to stderr from inside its receive loop; ours logs it. Killing a window
    that is gone (the reset races the windows' own exit) is expected and silent."""
    x = XConnection(bare_display.name, requirements(DesktopSettings(display=bare_display.name)))
    try:
        with caplog.at_level(logging.WARNING, logger="deskpilot.desktop.x11.connection"):
            x.kill_client(0x3FFFFF)  # no such window
            x.sync()
            assert not [r for r in caplog.records if r.getMessage() == "X protocol error"]
            x.display.create_resource_object("window", 0x3FFFFF).kill_client()  # no handler of its own
            x.sync()
        logged = [r for r in caplog.records if r.getMessage() == "X protocol error"]
        assert len(logged) == 1 and logged[0].error == "BadValue", logged  # type: ignore[attr-defined]
        assert "X protocol error" not in capsys.readouterr().err
    finally:
        x.close()
