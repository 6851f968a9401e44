"""Key names and buttons clients rely on where the spec is silent, proven in a real Tk window: a single
letter is its key (a shortcut, not Shift+letter), the media keys and Fn arrive as their XF86 keysyms, back
and forward are X buttons 8 and 9, and on the display the tests' xfwm4 manages with the appliance's own
settings, Alt+click and Alt+drag reach the application instead of the window manager."""

from __future__ import annotations

import pytest

from tests.integration.desktop.conftest import Desktop, focus
from tests.unit.computer.test_keys_actions import XF86_KEYS

SHIFT, CONTROL, ALT = 1, 4, 8  # X modifier masks (Alt is Mod1)


def presses(state: dict, keysym: int) -> list[int]:
    """The modifier state of every press of ``keysym`` the probe received."""
    return [mods for sym, mods in state.get("keys", []) if sym == keysym]


def test_an_upper_case_letter_in_a_chord_is_the_shortcut_not_shift(desktop: Desktop, probe) -> None:
    p = probe(text="x")
    focus(desktop, p)
    desktop.act(action="press_keys", keys=["LeftControl", "C"], press="down")
    desktop.act(action="press_keys", keys=["LeftControl", "C"], press="up")
    state = p.wait(lambda s: presses(s, ord("c")), what="the c of ctrl+c")
    assert [m & (CONTROL | SHIFT) for m in presses(state, ord("c"))] == [CONTROL]  # ctrl+c, no shift
    desktop.act(action="type_keys", keys=["A", "shift", "B"])  # letters are keys, shift only when named
    assert p.wait(lambda s: s["text"] == "xab", what="typed keys")["text"] == "xab"


def test_a_key_held_while_a_model_thinks_is_typed_once(desktop: Desktop, probe) -> None:
    # the server's autorepeat would type a held key on and on after 660 ms; the desktop turns it off
    p = probe()
    focus(desktop, p)
    desktop.act(action="press_keys", keys=["a"], press="down")
    desktop.act(action="wait", duration=1500)
    desktop.act(action="press_keys", keys=["a"], press="up")
    desktop.act(action="type_keys", keys=["b"])  # the end of the input, for the probe to wait on
    assert p.wait(lambda s: s.get("text", "").endswith("b"), what="typed keys")["text"] == "ab"


@pytest.mark.parametrize(("name", "keysym"), XF86_KEYS)
def test_bytebots_media_keys_and_fn_reach_the_window(desktop: Desktop, probe, name: str, keysym: int) -> None:
    p = probe()
    focus(desktop, p)
    desktop.act(action="type_keys", keys=[name])
    p.wait(lambda s: presses(s, keysym), what=f"{name} as keysym {keysym:#x}")


def test_back_and_forward_are_buttons_8_and_9(desktop: Desktop, probe) -> None:
    p = probe()
    focus(desktop, p)
    for button in ("back", "forward"):
        desktop.act(action="click_mouse", coordinates=p.center, button=button, clickCount=1)
    desktop.act(action="press_mouse", coordinates=p.center, button="back", press="down")
    desktop.act(action="press_mouse", button="back", press="up")
    state = p.wait(lambda s: s["buttons"][-3:] == [8, 9, 8], what="buttons 8, 9 and 8")
    assert state["buttons"][-3:] == [8, 9, 8]


def test_alt_click_reaches_the_application(desktop: Desktop, probe) -> None:
    p = probe()
    focus(desktop, p)
    before = len(p.state()["clicks"])
    desktop.act(action="click_mouse", coordinates=p.center, button="left", clickCount=1, holdKeys=["alt"])
    state = p.wait(lambda s: len(s["clicks"]) > before, what="the alt+click")
    assert [(b, m & ALT) for b, m in state["clicks"][before:]] == [(1, ALT)]


def test_alt_drag_reaches_the_application_and_leaves_the_window_in_place(desktop: Desktop, probe) -> None:
    p = probe()
    focus(desktop, p)
    where = desktop.x.geometry(p.wid)
    before = len(p.state()["clicks"])
    start = p.center
    path = [start, {"x": start["x"] + 150, "y": start["y"] + 60}]
    desktop.act(action="drag_mouse", path=path, button="left", holdKeys=["alt"])
    state = p.wait(lambda s: len(s["clicks"]) > before, what="the alt+drag's press")
    assert [(b, m & ALT) for b, m in state["clicks"][before:]] == [(1, ALT)]
    assert desktop.x.geometry(p.wid) == where  # xfwm4's easy_click would have moved the window
