"""A human's RFB input becomes the actions an API client would have sent, each one valid for /computer-use."""

from __future__ import annotations

import struct
from typing import Any

from deskpilot.computer.actions import parse_action
from deskpilot.desktop.human import HumanInput

HANDSHAKE = b"RFB 003.008\n" + bytes([1]) + bytes([1])
CTRL, SHIFT, RETURN, TAB, L = 0xFFE3, 0xFFE1, 0xFF0D, 0xFF09, 0x6C


def key(sym: int, down: bool) -> bytes:
    return struct.pack(">BBxxI", 4, int(down), sym)


def tap(sym: int) -> bytes:
    return key(sym, True) + key(sym, False)


def pointer(x: int, y: int, mask: int = 0) -> bytes:
    return struct.pack(">BBHH", 5, mask, x, y)


def recorded(stream: bytes, chunk: int | None = None) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    h = HumanInput(lambda action, at: out.append(action))
    data = HANDSHAKE + stream
    for i in range(0, len(data), chunk or len(data)):
        h.feed(data[i : i + (chunk or len(data))])
    h.flush()
    for action in out:
        parse_action(action)  # every recorded action is one /computer-use takes
    return out


def test_a_press_and_release_at_one_spot_is_a_click() -> None:
    assert recorded(pointer(500, 300) + pointer(500, 300, 1) + pointer(501, 300, 1) + pointer(501, 300)) == [
        {"action": "click_mouse", "coordinates": {"x": 500, "y": 300}, "button": "left", "clickCount": 1}
    ]


def test_two_quick_clicks_are_a_double_click_and_right_is_right() -> None:
    click = pointer(40, 50, 1) + pointer(40, 50)
    assert recorded(click + click)[0]["clickCount"] == 2
    assert recorded(pointer(40, 50, 4) + pointer(40, 50))[0]["button"] == "right"


def test_press_move_release_elsewhere_is_a_drag_with_its_path() -> None:
    stream = pointer(100, 100, 1) + pointer(150, 120, 1) + pointer(300, 200, 1) + pointer(300, 200)
    assert recorded(stream) == [
        {
            "action": "drag_mouse",
            "path": [{"x": 100, "y": 100}, {"x": 150, "y": 120}, {"x": 300, "y": 200}],
            "button": "left",
        }
    ]


def test_wheel_notches_are_one_scroll() -> None:
    notch = pointer(700, 400, 16) + pointer(700, 400)  # button 5: down
    assert recorded(notch * 3) == [
        {"action": "scroll", "coordinates": {"x": 700, "y": 400}, "direction": "down", "scrollCount": 3}
    ]


def test_printable_keys_are_text_and_named_keys_a_sequence() -> None:
    text = b"".join(tap(ord(c)) for c in "hi ")
    shifted = key(SHIFT, True) + tap(ord("A")) + key(SHIFT, False)
    assert recorded(text + shifted + tap(RETURN) + tap(TAB), chunk=3) == [
        {"action": "type_text", "text": "hi A"},
        {"action": "type_keys", "keys": ["enter", "tab"]},
    ]


def test_ctrl_l_is_a_chord_pressed_and_released() -> None:
    stream = tap(ord("a")) + key(CTRL, True) + tap(L) + key(CTRL, False) + tap(ord("b"))
    assert recorded(stream) == [
        {"action": "type_text", "text": "a"},
        {"action": "press_keys", "keys": ["ctrl", "l"], "press": "down"},
        {"action": "press_keys", "keys": ["ctrl", "l"], "press": "up"},
        {"action": "type_text", "text": "b"},
    ]


def test_a_modifier_held_over_a_click_is_its_hold_keys() -> None:
    stream = key(CTRL, True) + pointer(10, 20, 1) + pointer(10, 20) + key(CTRL, False)
    assert recorded(stream)[0]["holdKeys"] == ["ctrl"]


def test_a_stream_it_cannot_follow_stops_the_recording_only() -> None:
    out: list[dict[str, Any]] = []
    h = HumanInput(lambda action, at: out.append(action))
    h.feed(HANDSHAKE + bytes([99, 0, 0]))  # an unknown message: nothing raised
    h.feed(pointer(1, 1, 1) + pointer(1, 1))
    h.flush()
    assert out == []
