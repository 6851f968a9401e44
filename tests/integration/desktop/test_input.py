"""Mouse and keyboard actions, each proven by its effect on the real X server or a real Tk widget."""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Callable

from Xlib import X

from tests.integration.desktop.conftest import Desktop, Probe, focus, map_input_window, wait_for


def test_move_mouse_puts_the_pointer_where_asked(desktop: Desktop) -> None:
    for x, y in [(10, 20), (1919, 1079), (960.4, 540.6)]:
        desktop.act(action="move_mouse", coordinates={"x": x, "y": y})
        assert desktop.x.pointer() == (round(x), round(y))


def test_cursor_position_reports_the_pointer(desktop: Desktop) -> None:
    desktop.act(action="move_mouse", coordinates={"x": 321, "y": 123})
    assert desktop.act(action="cursor_position")["data"] == {"x": 321, "y": 123}


def test_trace_mouse_ends_on_the_last_point(desktop: Desktop) -> None:
    path = [{"x": 100 + 10 * i, "y": 100 + 5 * i} for i in range(20)]
    desktop.act(action="trace_mouse", path=path)
    assert desktop.x.pointer() == (290, 195)


def test_click_focuses_the_window_under_the_pointer(desktop: Desktop, probe) -> None:
    left = probe(x=50, y=100, width=500, height=300)
    right = probe(x=700, y=100, width=500, height=300)

    def active(p: Probe) -> Callable[[], bool]:
        return lambda: desktop.x.active_window() == p.wid

    for p in (left, right, left):
        desktop.act(action="click_mouse", coordinates=p.center, button="left", clickCount=1)
        wait_for(active(p), what=f"{p.title} active")
        p.wait(lambda s: s["focus"], what="keyboard focus")


def test_click_without_coordinates_uses_the_pointer_and_counts_clicks(desktop: Desktop, probe) -> None:
    p = probe(text="alphabetagamma delta epsilon")
    focus(desktop, p)
    desktop.act(action="move_mouse", coordinates={"x": p.x + 30, "y": p.y + 30})  # inside the first word
    desktop.act(action="click_mouse", button="left", clickCount=2)
    assert p.wait(lambda s: s["sel"], what="double-click selection")["sel"] == "alphabetagamma"
    desktop.act(action="click_mouse", button="left", clickCount=3)
    line = p.wait(lambda s: "delta" in s["sel"], what="triple-click selection")["sel"]
    assert line.strip() == "alphabetagamma delta epsilon"
    assert 1 in p.state()["buttons"]


def shift_click_across(desktop: Desktop, p) -> None:
    """A click before the probe's text, then a shift-click ten characters further: a selection of them."""
    y = p.y + 30
    desktop.act(action="click_mouse", coordinates={"x": p.x + 22, "y": y}, button="left", clickCount=1)
    desktop.act(
        action="click_mouse",
        coordinates={"x": p.x + 22 + 11 * 10, "y": y},
        button="left",
        clickCount=1,
        holdKeys=["shift"],
    )


def test_click_with_hold_keys_extends_the_selection(desktop: Desktop, probe) -> None:
    p = probe(text="0123456789abcdefghij")
    focus(desktop, p)
    shift_click_across(desktop, p)
    sel = p.wait(lambda s: s["sel"], what="shift-click selection")["sel"]
    assert sel.startswith("0123") and len(sel) >= 8


def test_click_with_hold_keys_keeps_them_down_while_the_window_manager_holds_the_click(
    desktop: Desktop, probe
) -> None:
    """xfwm4 freezes every click on a client window (a passive grab) until it has handled it; a slow WM
    must not turn a shift-click into a plain click. Stopping xfwm4 for a moment makes it slow on purpose."""
    p = probe(text="0123456789abcdefghij")
    focus(desktop, p)
    wm = desktop.display.children[0]  # xfwm4, started with the display
    os.kill(wm.pid, signal.SIGSTOP)
    resume = threading.Timer(0.3, os.kill, (wm.pid, signal.SIGCONT))
    resume.start()
    try:
        shift_click_across(desktop, p)
    finally:
        resume.join()
        os.kill(wm.pid, signal.SIGCONT)
    sel = p.wait(lambda s: s["sel"], what="shift-click selection")["sel"]
    assert sel.startswith("0123") and len(sel) >= 8


def test_drag_mouse_selects_text(desktop: Desktop, probe) -> None:
    p = probe(text="drag across these words")
    focus(desktop, p)
    y = p.y + 30
    desktop.act(action="drag_mouse", path=[{"x": p.x + 21, "y": y}, {"x": p.x + 300, "y": y}], button="left")
    p.wait(lambda s: s["sel"].startswith("drag across"), what="drag selection")


def test_press_mouse_down_then_up_selects_text(desktop: Desktop, probe) -> None:
    p = probe(text="press and release")
    focus(desktop, p)
    y = p.y + 30
    desktop.act(action="press_mouse", coordinates={"x": p.x + 21, "y": y}, button="left", press="down")
    desktop.act(action="move_mouse", coordinates={"x": p.x + 150, "y": y})
    desktop.act(action="press_mouse", coordinates={"x": p.x + 200, "y": y}, button="left", press="up")
    assert p.wait(lambda s: s["sel"], what="selection")["sel"].startswith("press and")


def test_drag_mouse_moves_a_window_by_its_title_bar(desktop: Desktop, probe) -> None:
    p = probe(x=300, y=300, width=400, height=200)
    x0, y0, _, _ = desktop.x.geometry(p.wid)
    grab = {"x": x0 + 150, "y": y0 - 12}  # xfwm4's title bar sits just above the client area
    desktop.act(action="drag_mouse", path=[grab, {"x": grab["x"] + 200, "y": grab["y"] + 150}], button="left")
    wait_for(lambda: desktop.x.geometry(p.wid)[:2] == (x0 + 200, y0 + 150), what="window moved")


def test_scroll_sends_buttons_4_to_7_to_the_window(desktop: Desktop) -> None:
    d, win = map_input_window(desktop, 1300, 600, 300, 300)
    try:
        for direction, count in [("up", 2), ("down", 3), ("left", 1), ("right", 4)]:
            desktop.act(
                action="scroll", coordinates={"x": 1400, "y": 700}, direction=direction, scrollCount=count
            )
        seen: list[int] = []

        def collect() -> bool:
            while d.pending_events():
                ev = d.next_event()
                if ev.type == X.ButtonPress:
                    seen.append(ev.detail)
            return len(seen) >= 10

        wait_for(collect, what="10 scroll button presses")
        assert seen == [4, 4, 5, 5, 5, 6, 7, 7, 7, 7]
    finally:
        win.destroy()
        d.close()


def test_type_text_types_unicode_tab_and_newline_in_a_text_widget(desktop: Desktop, probe) -> None:
    p = probe()
    focus(desktop, p)
    text = "héllo 美 ñ\tend\n"
    desktop.act(action="type_text", text=text)
    assert p.wait(lambda s: s["text"] == text, what="typed text")["text"] == text


def test_type_text_with_more_distinct_characters_than_spare_keycodes(desktop: Desktop, probe) -> None:
    p = probe()
    focus(desktop, p)
    text = "".join(chr(c) for c in range(0x3041, 0x3041 + 30)) + " ÀÉÎÕÜ €"
    desktop.act(action="type_text", text=text)
    p.wait(lambda s: s["text"] == text, what="typed text")


def test_type_text_delay_spaces_the_characters(desktop: Desktop, probe) -> None:
    p = probe()
    focus(desktop, p)
    t0 = time.monotonic()
    desktop.act(action="type_text", text="abcde", delay=50)
    assert time.monotonic() - t0 >= 0.2
    p.wait(lambda s: s["text"] == "abcde", what="typed text")


def test_type_keys_is_a_sequence_and_press_keys_is_a_chord(desktop: Desktop, probe) -> None:
    p = probe(text="x")
    focus(desktop, p)
    desktop.act(action="type_keys", keys=["shift", "a"])  # shift pressed and released, then a: "a"
    p.wait(lambda s: s["text"] == "xa", what="sequence")
    desktop.act(action="press_keys", keys=["shift", "b"], press="down")  # a chord: "B"
    desktop.act(action="press_keys", keys=["shift", "b"], press="up")
    p.wait(lambda s: s["text"] == "xaB", what="chord")
    # a single letter names its key: "Z" is the z key, Shift only when named
    desktop.act(action="type_keys", keys=["ctrl", "a", "End", "Return", "Num1", "space", "Z"], delay=5)
    p.wait(lambda s: s["text"] == "xaBa\n1 z", what="named keys")


def test_unknown_key_in_type_keys_presses_nothing(desktop: Desktop, probe) -> None:
    p = probe(text="keep")
    focus(desktop, p)
    r = desktop.post(action="type_keys", keys=["a", "b", "nosuchkey", "c"])
    assert r.status_code == 400
    assert "nosuchkey" in r.json()["error"]
    desktop.act(action="type_keys", keys=["z"])  # a marker: everything before it has been processed
    p.wait(lambda s: s["text"].endswith("z"), what="marker")
    assert p.state()["text"] == "keepz"
