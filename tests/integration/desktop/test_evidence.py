"""Evidence of delivery (``evidence: true``): a click into a window shows the pointer where it ended, the
focus moving to that window, the screen changing and where; a click on an unchanging spot shows no change;
keys typed say whether they had a window to go to, and which; without the field the answer is the spec's."""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable

from Xlib import X

from deskpilot.computer.geometry import SCREEN, clock
from tests.integration.desktop.conftest import Desktop, Probe, map_input_window


def click(x: int, y: int, **extra: object) -> dict:
    return {
        "action": "click_mouse",
        "coordinates": {"x": x, "y": y},
        "button": "left",
        "clickCount": 1,
        **extra,
    }


def test_a_click_into_a_window_is_seen_to_land(desktop: Desktop, probe: Callable[..., Probe]) -> None:
    first = probe(x=100, y=100, colour="#ffffff")
    second = probe(x=900, y=100, colour="#ffffff")
    # the first window has the focus once the window manager has given it (settled: it redraws the frames)
    desktop.act(**click(first.x + 20, first.y + 20, settle={"quietMs": 100, "maxMs": 2000}))
    body = desktop.act(
        **click(second.x + 30, second.y + 40, evidence=True, settle={"quietMs": 100, "maxMs": 2000})
    )
    ev = body["evidence"]
    assert ev["pointer"] == {"x": second.x + 30, "y": second.y + 40}
    assert ev["focusBefore"]["title"] == first.title and ev["focusAfter"]["title"] == second.title, ev
    assert ev["focusAfter"]["id"] == second.wid
    assert ev["screenChanged"] is True  # the window manager redrew both frames
    box = ev["damaged"]  # where: over both windows' frames, within the screen
    assert box["x"] <= second.x and box["x"] + box["width"] >= second.x and box["width"] > 0, (box, second)
    assert box["x"] >= 0 and box["x"] + box["width"] <= 1920 and box["y"] + box["height"] <= 1080


def test_typed_keys_say_where_they_went(desktop: Desktop, probe: Callable[..., Probe]) -> None:
    p = probe(x=400, y=300)
    desktop.act(**click(p.x + 20, p.y + 20, settle={"quietMs": 100, "maxMs": 2000}))
    ev = desktop.act(action="type_text", text="hi", evidence=True)["evidence"]
    assert ev["keysDelivered"] is True and ev["keysTo"]["title"] == p.title
    # the focus set to None (as a crashed client can leave it): the keys go nowhere, and the answer says so
    desktop.x.d.set_input_focus(X.NONE, X.RevertToNone, X.CurrentTime)
    desktop.x.root.delete_property(desktop.x.d.intern_atom("_NET_ACTIVE_WINDOW"))
    desktop.x.d.sync()
    ev = desktop.act(action="press_keys", keys=["shift"], press="up", evidence=True)["evidence"]
    assert ev["keysDelivered"] is False and ev["keysTo"] is None
    assert (
        "keysDelivered" not in desktop.act(**click(5, 1075, evidence=True))["evidence"]
    )  # not a keyboard action


def test_an_action_that_changes_nothing_says_so(desktop: Desktop, probe: Callable[..., Probe]) -> None:
    p = probe(x=300, y=400)
    desktop.act(**click(p.x + 10, p.y + 10, settle={"quietMs": 200, "maxMs": 3000}))
    body = desktop.act(
        action="move_mouse",
        coordinates={"x": p.x + 11, "y": p.y + 10},
        evidence=True,
        settle={"quietMs": 100, "maxMs": 2000},
    )
    assert body["evidence"]["screenChanged"] is False and body["evidence"]["damaged"] is None, body
    assert body["evidence"]["focusBefore"] == body["evidence"]["focusAfter"]


def test_without_the_field_the_answer_is_the_specs(desktop: Desktop) -> None:
    assert desktop.act(**click(5, 1075)) == {"success": True}


def test_evidence_is_a_boolean(desktop: Desktop) -> None:
    for value in ("yes", 1, None):
        r = desktop.post(**click(5, 1075, evidence=value))
        assert r.status_code == 400, r.text


def test_the_window_active_last_time_may_be_gone(desktop: Desktop, probe: Callable[..., Probe]) -> None:
    # the title and class of the window active at the last evidence are asked for early: a window that
    # closed since, or another one active now, reads as it is
    gone, stays = probe(x=100, y=500), probe(x=900, y=500)
    desktop.act(**click(gone.x + 20, gone.y + 20, settle={"quietMs": 100, "maxMs": 2000}))
    ev = desktop.act(**click(gone.x + 25, gone.y + 20, evidence=True))["evidence"]
    assert ev["focusAfter"]["id"] == gone.wid
    gone.proc.kill()
    gone.proc.wait(5)
    desktop.act(**click(stays.x + 20, stays.y + 20, settle={"quietMs": 100, "maxMs": 2000}))
    ev = desktop.act(**click(stays.x + 30, stays.y + 20, evidence=True))["evidence"]
    assert ev["focusBefore"]["title"] == stays.title == ev["focusAfter"]["title"], ev


def test_the_panel_clock_drawing_meanwhile_is_not_the_actions(
    desktop: Desktop, probe: Callable[..., Probe]
) -> None:
    """The clock draws on its own (a minute turning over): an action that drew nothing says so, and settles,
    while it draws; a drawing across its edge is the action's business again."""
    p = probe(x=300, y=400)
    desktop.act(**click(p.x + 10, p.y + 10, settle={"quietMs": 200, "maxMs": 3000}))
    x, y, w, h = clock(SCREEN)
    d, win = map_input_window(desktop, x, y, w, h)
    gc = win.create_gc(foreground=0)
    ticking = threading.Event()
    move, moved = threading.Event(), threading.Event()
    stop = threading.Event()

    def tick() -> None:  # far more often than a clock, so that any settle or evidence read meets it
        for i in itertools.count():
            if move.is_set() and not moved.is_set():  # here: python-xlib's connection is one thread's
                win.configure(x=x - 20)  # across the clock's edge: not the clock's
                d.sync()
                moved.set()
            win.fill_rectangle(gc, 0, 0, w, h) if i % 2 else win.clear_area(0, 0, w, h)
            d.sync()
            ticking.set()
            if stop.wait(0.005):
                return

    ticker = threading.Thread(target=tick)
    ticker.start()
    try:
        ticking.wait(5)
        for press in ("down", "up"):
            body = desktop.act(
                action="press_keys", keys=["shift"], press=press, evidence=True, settle={"maxMs": 2000}
            )
            assert body["drawn"] is False and body["settled"] is True, body
            assert body["evidence"]["screenChanged"] is False and body["evidence"]["damaged"] is None, body
        move.set()
        assert moved.wait(5)
        # a modifier expects no drawing (only a quiet ~50 ms): the ticker, a thread of this busy process, is
        # given the whole 300 ms to draw
        settle = {"expectMs": 300, "maxMs": 300}
        body = desktop.act(action="press_keys", keys=["shift"], press="down", evidence=True, settle=settle)
        assert body["drawn"] is True and body["evidence"]["screenChanged"] is True, body
    finally:
        stop.set()
        ticker.join(5)
        desktop.act(action="press_keys", keys=["shift"], press="up")
        d.close()
