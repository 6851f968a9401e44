"""An input action that asks to settle and to look: one request acts, waits until nothing was drawn for
``quietMs`` (bounded by ``maxMs``) and answers with the screenshot; without the fields the answer is the
spec's, byte for byte."""

from __future__ import annotations

import base64
import contextlib
import struct
import subprocess
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import cv2
import numpy as np
import pytest
from Xlib import display as xdisplay

from deskpilot.desktop.settle import REACTION_MS
from tests.integration.desktop.conftest import Desktop, Probe, stop_process, wait_for

GTK_PROBE = Path(__file__).with_name("probe_gtk.py")
CLICK = {"action": "click_mouse", "coordinates": {"x": 5, "y": 1075}, "button": "left", "clickCount": 1}


def click(x: int, y: int) -> dict:
    return {**CLICK, "coordinates": {"x": x, "y": y}}


def png_size(b64: str) -> tuple[int, int]:
    head = base64.b64decode(b64[:44])
    assert head[:8] == b"\x89PNG\r\n\x1a\n"
    w, h = struct.unpack(">II", head[16:24])
    return int(w), int(h)


@pytest.fixture
def busy(desktop: Desktop) -> Iterator[None]:
    """Another client drawing on the root window every 10 ms, as an animation would."""
    stop = threading.Event()

    def draw() -> None:
        d = xdisplay.Display(desktop.display.name)
        root = d.screen().root
        gcs = [root.create_gc(foreground=c) for c in (0x101010, 0xEFEFEF)]
        i = 0
        while not stop.is_set():
            i += 1
            root.fill_rectangle(gcs[i % 2], 1800, 1000, 4, 4)  # not in the clock's corner: it is ignored
            d.sync()
            time.sleep(0.01)
        d.close()

    thread = threading.Thread(target=draw, daemon=True)
    thread.start()
    yield
    stop.set()
    thread.join(5)


def test_without_the_fields_the_answer_is_the_specs(desktop: Desktop) -> None:
    r = desktop.post(**CLICK)
    assert r.status_code == 200 and r.json() == {"success": True}


def test_act_settle_and_look_in_one_request(desktop: Desktop) -> None:
    started = time.monotonic()
    body = desktop.act(**CLICK, settle={"quietMs": 60, "maxMs": 2000}, screenshot={"width": 1280})
    took = (time.monotonic() - started) * 1000
    assert body["settled"] is True and 60 <= body["settledMs"] <= took
    assert png_size(body["data"]["image"]) == (1280, 720)
    assert set(body) == {"success", "settled", "settledMs", "drawn", "data"}


def test_a_screen_that_keeps_changing_is_waited_for_at_most_max_ms(desktop: Desktop, busy: None) -> None:
    body = desktop.act(**CLICK, settle={"quietMs": 100, "maxMs": 300})
    assert body["settled"] is False and 300 <= body["settledMs"] < 600


def test_a_screenshot_without_settling(desktop: Desktop) -> None:
    body = desktop.act(action="type_text", text="", screenshot={"format": "jpeg", "scale": 0.5})
    assert body["data"]["mediaType"] == "image/jpeg" and "settledMs" not in body


def test_a_wait_settles_after_waiting_and_answers_with_the_frame(desktop: Desktop) -> None:
    started = time.monotonic()
    body = desktop.act(
        action="wait", duration=100, settle={"quietMs": 30, "maxMs": 1000}, screenshot={"width": 1280}
    )
    took = (time.monotonic() - started) * 1000
    assert body["settled"] is True and body["settledMs"] >= 30 and took >= 130
    assert png_size(body["data"]["image"]) == (1280, 720)
    assert set(body) == {"success", "settled", "settledMs", "drawn", "data"}


def test_a_wait_on_a_changing_screen_settles_at_most_max_ms_after_it(desktop: Desktop, busy: None) -> None:
    started = time.monotonic()
    body = desktop.act(action="wait", duration=200, settle={"quietMs": 100, "maxMs": 300})
    took = (time.monotonic() - started) * 1000
    assert body["settled"] is False and 300 <= body["settledMs"] < 600 and took >= 500


def test_a_wait_takes_no_evidence_and_no_space(desktop: Desktop) -> None:
    # not input actions: the fields are ignored (as unknown fields are), the answer is the spec's
    assert desktop.act(action="wait", duration=0, evidence=True, space={"width": 1280}) == {"success": True}


@pytest.mark.parametrize(
    "extra",
    [
        {"settle": {"quietMs": 0}},
        {"settle": {"quietMs": 50, "maxMs": 10**9}},
        {"settle": {"quiet": 50}},
        {"settle": {"quietMs": True}},
        {"screenshot": {"width": 1280, "scale": 0.5}},
        {"screenshot": {"format": "gif"}},
        {"screenshot": "yes"},
    ],
)
@pytest.mark.parametrize("action", [CLICK, {"action": "wait", "duration": 10}])
def test_bad_options_are_a_400_before_acting(desktop: Desktop, action: dict, extra: dict) -> None:
    r = desktop.post(**action, **extra)
    assert r.status_code == 400, r.text
    assert r.json()["success"] is False


class Looks:
    """Counts the desktop's captures, and when the first began."""

    def __init__(self, desktop: Desktop, monkeypatch: pytest.MonkeyPatch) -> None:
        self.started = threading.Event()
        self.times: list[float] = []
        capture = desktop.controller.capture

        def spy(options: object = None) -> object:
            self.times.append(time.monotonic())
            self.started.set()
            return capture(options)  # type: ignore[arg-type]

        monkeypatch.setattr(desktop.controller, "capture", spy)


def fill(name: str, colour: int, y: int) -> None:
    d = xdisplay.Display(name)
    root = d.screen().root
    root.fill_rectangle(root.create_gc(foreground=colour), 600, y, 300, 100)
    d.sync()
    d.close()


def pixel(b64: str, x: int, y: int) -> int:
    frame = cv2.imdecode(np.frombuffer(base64.b64decode(b64), np.uint8), cv2.IMREAD_COLOR)
    assert frame is not None
    b, g, r = (int(v) for v in frame[y, x])
    return r << 16 | g << 8 | b


def test_the_frame_is_captured_while_the_window_runs_out(
    desktop: Desktop, monkeypatch: pytest.MonkeyPatch
) -> None:
    fill(desktop.display.name, 0x3366AA, 200)  # what the action drew
    looks = Looks(desktop, monkeypatch)
    started = time.monotonic()
    body = desktop.act(**CLICK, settle={"quietMs": 200, "maxMs": 2000}, screenshot={})
    settled_at = started + body["settledMs"] / 1000
    assert body["settled"] is True and len(looks.times) == 1, looks.times
    assert looks.times[0] < settled_at - 0.05, "captured once half the window was quiet, not after it"
    assert pixel(body["data"]["image"], 700, 250) == 0x3366AA


def test_a_drawing_after_the_capture_ahead_is_in_the_frame(
    desktop: Desktop, monkeypatch: pytest.MonkeyPatch
) -> None:
    looks = Looks(desktop, monkeypatch)

    def draw_once_looked() -> None:
        assert looks.started.wait(5)
        fill(desktop.display.name, 0xAA3366, 400)

    drawer = threading.Thread(target=draw_once_looked)
    drawer.start()
    body = desktop.act(**CLICK, settle={"quietMs": 200, "maxMs": 3000}, screenshot={"width": 1280})
    drawer.join(5)
    assert body["settled"] is True and len(looks.times) >= 2, looks.times
    assert pixel(body["data"]["image"], 500, 300) == 0xAA3366  # (750, 450) on the screen, at 2/3


@contextlib.contextmanager
def gtk_probe(desktop: Desktop, *mode: str) -> Iterator[tuple[int, int, int, int, int]]:
    """A GTK window (probe_gtk.py), answering pings, mapped and painted: (id, x, y, width, height)."""
    title = f"gtk-{uuid.uuid4().hex[:8]}"
    proc = subprocess.Popen(
        ["/usr/bin/python3", str(GTK_PROBE), title, "500x300+300+300", *mode],
        env=desktop.display.env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        wid = int(str(wait_for(lambda: desktop.x.find(title), 15, f"window {title}")))
        desktop.act(action="wait", duration=0, settle={"quietMs": 300, "maxMs": 5000})  # mapped and painted
        yield (wid, *desktop.x.geometry(wid))
    finally:
        stop_process(proc)


@pytest.fixture
def gtk_window(desktop: Desktop) -> Iterator[tuple[int, int, int, int, int]]:
    """A GTK window drawing nothing on input."""
    with gtk_probe(desktop) as window:
        yield window


def test_a_client_answers_the_ping_sent_after_the_input(
    desktop: Desktop, gtk_window: tuple[int, int, int, int, int]
) -> None:
    # the EWMH ping a settle sends to the window that got the input comes back once its client read it
    answers_a_ping(desktop, gtk_window[0])
    watcher = desktop.controller.connections.damage()
    assert watcher is not None and watcher.ping(desktop.x.root.id) == 0  # the root takes none: nobody answers


def answers_a_ping(desktop: Desktop, wid: int) -> None:
    watcher = desktop.controller.connections.damage()
    assert watcher is not None
    serial = watcher.ping(wid)
    assert serial > 0
    wait_for(lambda: watcher.poll(sync=True) >= 0 and watcher.answered((serial,)) is not None, 10, "the pong")


def test_a_qt_client_answers_the_ping_too(desktop: Desktop, tmp_path: Path) -> None:
    # Qt (KeePassXC) sends its answer to the root's structure listeners, GTK to its substructure's: a
    # settle that heard only GTK's waited out each KeePassXC settle's whole quiet, and with the ping that
    # confirms rest, its maxMs
    env = {**desktop.display.env, "HOME": str(tmp_path), "XDG_CONFIG_HOME": str(tmp_path / "config")}
    proc = subprocess.Popen(
        ["keepassxc"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True
    )
    try:
        answers_a_ping(desktop, int(str(wait_for(lambda: desktop.x.find("KeePassXC"), 30, "its window"))))
    finally:
        stop_process(proc)


def test_a_click_that_draws_nothing_says_so_once_its_client_has_read_it(
    desktop: Desktop, gtk_window: tuple[int, int, int, int, int]
) -> None:
    _, x, y, width, height = gtk_window
    spot = click(x + width // 2, y + height // 2)
    desktop.act(**spot, settle={"expectMs": 0, "quietMs": 300, "maxMs": 3000})  # focused, at rest
    body = desktop.act(**spot, settle={"expectMs": 5000, "maxMs": 10000}, evidence=True)
    assert body["drawn"] is False and body["evidence"]["screenChanged"] is False
    # ended once the client (and the window manager) had read the click, not by the 5 s window
    assert body["settled"] is True and body["settledMs"] < 5000


def test_a_drawing_on_a_timer_due_as_the_quiet_ends_is_waited_for(desktop: Desktop) -> None:
    # a click paints the window blue at once, then green from two 40 ms timers of its main loop: when the
    # quiet after the blue ends, the second timer is pending, so the frame is the green one
    with gtk_probe(desktop, "steps") as (_, x, y, width, height):
        middle = (x + width // 2, y + height // 2)
        for _ in range(3):
            body = desktop.act(**click(*middle), settle={"maxMs": 3000}, screenshot={}, evidence=True)
            assert body["settled"] is True and body["evidence"]["screenChanged"] is True
            assert pixel(body["data"]["image"], *middle) == 0x00FF00, body["settledMs"]


@pytest.mark.parametrize("mode", ["tooltip", "worker"])
def test_a_clicks_delayed_reaction_is_waited_for_and_a_key_does_not_wait_for_one(
    desktop: Desktop, mode: str
) -> None:
    # a click paints the window blue at once and green 400 ms later from a main-loop timer (as GTK shows a
    # tooltip), or 300 ms later from a worker's timer in a program whose threads never look at rest (as
    # Firefox runs a page's timers): the frame of a click is the green one, every time
    with gtk_probe(desktop, mode) as (_, x, y, width, height):
        middle = (x + width // 2, y + height // 2)
        for _ in range(3):
            body = desktop.act(**click(*middle), settle={"maxMs": 3000}, screenshot={})
            assert body["settled"] is True and pixel(body["data"]["image"], *middle) == 0x00FF00, body
            desktop.act(action="wait", duration=0, settle={"quietMs": 100, "maxMs": 3000})
        # keys have no delayed reaction to wait for: a key the window ignores settles without the floor
        body = desktop.act(action="type_keys", keys=["x"], settle={"maxMs": 3000})
        assert body["settled"] is True and body["settledMs"] < REACTION_MS, body


def test_a_program_waiting_for_a_reply_between_two_drawings_is_waited_for(desktop: Desktop) -> None:
    # a click paints the window blue at once; 30 ms later its main thread waits 300 ms for one descriptor
    # (as Thunar waits for a synchronous call's reply while it loads a folder, every thread asleep), then
    # paints it green: the frame is the green one, every time
    with gtk_probe(desktop, "call") as (_, x, y, width, height):
        middle = (x + width // 2, y + height // 2)
        for _ in range(3):
            body = desktop.act(**click(*middle), settle={"maxMs": 3000}, screenshot={})
            green = pixel(body["data"]["image"], *middle) == 0x00FF00
            assert body["settled"] is True and green, body["settledMs"]
            desktop.act(action="wait", duration=0, settle={"quietMs": 100, "maxMs": 3000})


def test_a_window_gone_before_it_answers_the_ping_ends_the_settle(desktop: Desktop) -> None:
    # as above, but the program quits after its wait: the ping that was to confirm the rest is never
    # answered, and the settle ends once the window is found gone, not when maxMs runs out
    with gtk_probe(desktop, "quit") as (_, x, y, width, height):
        body = desktop.act(**click(x + width // 2, y + height // 2), settle={"maxMs": 5000})
        assert body["settled"] is True and body["settledMs"] < 2000, body


def show_later(name: str, delay: float, colour: int, box: tuple[int, int, int, int]) -> threading.Timer:
    """After ``delay`` s, a window of another client appears on top, filled with ``colour``."""

    def show() -> None:
        d = xdisplay.Display(name)
        x, y, w, h = box
        root = d.screen().root
        window = root.create_window(x, y, w, h, 0, 24, background_pixel=colour, override_redirect=True)
        window.map()
        d.sync()
        shown.append(d)

    shown: list[xdisplay.Display] = []
    timer = threading.Timer(delay, show)
    timer.shown = shown  # type: ignore[attr-defined]  # closed by the caller, which ends the window
    timer.start()
    return timer


def test_a_drawing_that_comes_late_is_waited_for(desktop: Desktop, probe: Callable[..., Probe]) -> None:
    # keys to a Tk window, which takes no pings: what is drawn 150 ms later (as a terminal's shell might)
    # is waited for, up to expectMs
    probe(x=300, y=300)
    desktop.act(action="wait", duration=0, settle={"quietMs": 300, "maxMs": 5000})  # placed and painted
    later = show_later(desktop.display.name, 0.15, 0x00AA00, (1000, 700, 200, 100))
    try:
        body = desktop.act(action="type_text", text="", settle={"quietMs": 20, "maxMs": 3000}, screenshot={})
        later.join()
        assert body["drawn"] is True and pixel(body["data"]["image"], 1100, 750) == 0x00AA00
    finally:
        later.join()
        for d in later.shown:  # type: ignore[attr-defined]
            d.close()
