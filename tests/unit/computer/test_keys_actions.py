"""Key names, request validation and small pure helpers of the desktop service (no display needed)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from deskpilot.computer import actions, keys
from deskpilot.computer.fields import APPLICATION_NAMES
from deskpilot.computer.geometry import Size, image_size
from deskpilot.desktop.apps import APPLICATIONS, DESKTOP, AppSpec, matches
from deskpilot.desktop.controller import Outcome
from deskpilot.desktop.files import media_type
from deskpilot.errors import InvalidAction


@pytest.mark.parametrize(
    ("name", "keysym_name"),
    [
        ("ctrl", "Control_L"),
        ("Control", "Control_L"),
        ("LeftControl", "Control_L"),
        ("SHIFT", "Shift_L"),
        ("alt", "Alt_L"),
        ("super", "Super_L"),
        ("win", "Super_L"),
        ("cmd", "Super_L"),
        ("meta", "Super_L"),
        ("esc", "Escape"),
        ("Escape", "Escape"),
        ("enter", "Return"),
        ("Return", "Return"),
        ("tab", "Tab"),
        ("space", "space"),
        ("backspace", "BackSpace"),
        ("del", "Delete"),
        ("delete", "Delete"),
        ("pgup", "Prior"),
        ("Page_Up", "Prior"),
        ("pgdn", "Next"),
        ("arrowup", "Up"),
        ("up", "Up"),
        ("f1", "F1"),
        ("F24", "F24"),
        ("printscreen", "Print"),
        ("KP_5", "KP_5"),
        ("NumPad5", "KP_5"),
        ("Num1", "1"),
        ("home", "Home"),
        ("end", "End"),
    ],
)
def test_key_names_resolve_case_insensitively(name: str, keysym_name: str) -> None:
    assert keys.resolve(name) == keys.keysym_names()[keysym_name]


def test_the_keysym_table_is_python_xlibs_and_needs_no_x() -> None:
    """keysyms.txt is generated from python-xlib (scripts/gen-keysyms.py); regenerate it after an upgrade."""
    import runpy
    import sys

    gen = runpy.run_path(str(Path(__file__).parents[3] / "scripts" / "gen-keysyms.py"))
    assert keys.keysym_names() == gen["xlib_keysyms"]()
    code = (
        "import sys, deskpilot.computer.actions\n"
        "sys.exit('Xlib' in sys.modules or 'deskpilot.desktop' in sys.modules)"
    )
    assert subprocess.run([sys.executable, "-c", code]).returncode == 0


def test_every_alias_resolves() -> None:
    for alias in keys._ALIASES:
        assert keys.resolve(alias)
    assert keys.resolve("XF86AudioMute") == keys.resolve("audiomute")


def test_single_characters_are_keys() -> None:
    assert keys.resolve("a") == ord("a")
    assert keys.resolve("é") == 0xE9
    assert keys.resolve("美") == 0x01000000 + ord("美")
    assert keys.resolve("!") == ord("!")  # not a letter: the character


def test_a_single_letter_names_its_key_whatever_its_case() -> None:
    """["LeftControl", "C"] is ctrl+c: an upper-case letter is the key, not the character (Shift is named)."""
    assert keys.resolve("C") == keys.resolve("c") == ord("c")
    assert keys.resolve("É") == 0xE9
    assert keys.char_keysym("C") == ord("C")  # type_text still types the character


# The key names Bytebot's prompt lists as valid (nut-js's Key enum), all 134 of them.
BYTEBOT_NAMED_KEYS = """
    Add AudioForward AudioMute AudioNext AudioPause AudioPlay AudioPrev AudioRandom AudioRepeat
    AudioRewind AudioStop AudioVolDown AudioVolUp Backslash Backspace CapsLock Clear Comma
    Decimal Delete Divide Down End Enter Equal Escape Fn Grave Home Insert
    Left LeftAlt LeftBracket LeftCmd LeftControl LeftShift LeftSuper LeftWin Menu Minus Multiply
    NumLock PageDown PageUp Pause Period Print Quote Return Right RightAlt RightBracket RightCmd
    RightControl RightShift RightSuper RightWin ScrollLock Semicolon Slash Space Subtract Tab Up
"""
BYTEBOT_KEYS = [
    *"ABCDEFGHIJKLMNOPQRSTUVWXYZ",
    *BYTEBOT_NAMED_KEYS.split(),
    *(f"F{n}" for n in range(1, 25)),
    *(f"Num{n}" for n in range(10)),
    *(f"NumPad{n}" for n in range(10)),
]


def test_every_key_name_of_bytebots_prompt_resolves() -> None:
    assert len(set(BYTEBOT_KEYS)) == 134
    for name in BYTEBOT_KEYS:
        assert keys.resolve(name), name


# The names of Bytebot's prompt we used to refuse, and two spellings besides, with the values of xorgproto's
# XF86keysym.h (the desktop tests check that these arrive in a window).
XF86_KEYS = [
    ("AudioForward", 0x1008FF97),
    ("AudioRandom", 0x1008FF99),
    ("AudioRepeat", 0x1008FF98),
    ("AudioRewind", 0x1008FF3E),
    ("Fn", 0x100811D0),  # XF86Fn, the evdev Fn key (not in python-xlib's table)
    ("XF86Fn", 0x100811D0),
    ("AudioRaiseVolume", 0x1008FF13),
]


@pytest.mark.parametrize(("name", "keysym"), XF86_KEYS)
def test_the_media_keys_and_fn_are_their_xf86_keysyms(name: str, keysym: int) -> None:
    assert keys.resolve(name) == keysym


def test_unknown_key_suggests_the_closest_names() -> None:
    with pytest.raises(ValueError, match="did you mean 'ctrl'"):
        keys.resolve("ctrll")
    with pytest.raises(ValueError, match="unknown key name"):
        keys.resolve("qqqqqqqq")


def test_every_action_has_a_model_and_the_union_covers_the_spec() -> None:
    spec = {
        "move_mouse",
        "trace_mouse",
        "click_mouse",
        "press_mouse",
        "drag_mouse",
        "scroll",
        "type_keys",
        "press_keys",
        "type_text",
        "paste_text",
        "wait",
        "screenshot",
        "cursor_position",
        "application",
        "accessibility",  # ours: the AT-SPI tree
        "write_file",
        "read_file",
    }
    assert set(actions.ACTION_NAMES) == spec


@pytest.mark.parametrize(
    ("body", "fragment"),
    [
        ([], "JSON object"),
        ({}, "'action' is required"),
        ({"action": 5}, "must be a string"),
        ({"action": "typ_keys"}, "did you mean 'type_keys'"),
        ({"action": "click_mouse", "modifiers": ["shift"], "button": "left", "clickCount": 1}, "'holdKeys'"),
        ({"action": "scroll", "direction": "up", "scrollCount": 101}, "scrollCount"),
        ({"action": "type_text", "text": "x" * 100_001}, "text"),
        ({"action": "type_text", "text": "a\x01b"}, "U+0001"),
        ({"action": "type_text", "text": "abc", "delay": 200_000}, "limit"),
        ({"action": "screenshot", "width": 100, "scale": 0.5}, "either 'width' or 'scale'"),
        ({"action": "screenshot", "format": "gif"}, "format"),
        ({"action": "application", "application": "calculator"}, "application"),
        ({"action": "read_file", "path": "a\x00b"}, "NUL"),
        ({"action": "move_mouse", "coordinates": {"x": -1, "y": 0}}, "greater than or equal to 0"),
    ],
)
def test_invalid_requests_are_rejected_with_the_fix(body: object, fragment: str) -> None:
    with pytest.raises(InvalidAction) as exc:
        actions.parse_action(body)
    assert fragment in exc.value.message


def test_file_action_errors_carry_the_message_field() -> None:
    from deskpilot.errors import desktop_error_body

    with pytest.raises(InvalidAction) as exc:
        actions.parse_action({"action": "read_file"})
    body = desktop_error_body(exc.value)
    assert body["message"] == body["error"] and "path" in body["error"]
    with pytest.raises(InvalidAction) as exc:
        actions.parse_action({"action": "wait"})
    assert "message" not in desktop_error_body(exc.value)


def test_valid_requests_parse_and_extra_fields_are_ignored() -> None:
    a = actions.parse_action({"action": "click_mouse", "button": "left", "clickCount": 2, "whatever": 1})
    assert isinstance(a, actions.ClickMouse) and a.coordinates is None
    s = actions.parse_action({"action": "screenshot"})
    assert isinstance(s, actions.Screenshot)
    assert (s.format, s.width, s.scale) == ("png", None, None)
    c = actions.parse_action({"action": "move_mouse", "coordinates": {"x": 1919.4, "y": 0.2}})
    assert isinstance(c, actions.MoveMouse)
    assert c.coordinates.xy == (1919, 0)


def test_outcome_bodies_match_the_design() -> None:
    assert Outcome().to_json() == b'{"success":true}'
    assert Outcome(position=(3, 4)).to_dict() == {"success": True, "data": {"x": 3, "y": 4}}
    assert Outcome(message="m").to_dict() == {"success": True, "message": "m"}


def test_image_size_keeps_the_aspect_ratio() -> None:
    screen = Size(1920, 1080)
    assert image_size(screen, None, None) == screen
    assert image_size(screen, 1280, None) == Size(1280, 720)
    assert image_size(screen, None, 0.5) == Size(960, 540)
    assert image_size(screen, 4000, None) == screen


def test_media_type_from_extension_else_sniffed() -> None:
    assert media_type("a.pdf", b"") == "application/pdf"
    assert media_type("blob", b"\x89PNG\r\n\x1a\nxxxx") == "image/png"
    assert media_type("blob", "plain ü".encode()) == "text/plain"
    assert media_type("blob", b"\xff\xfe\x00\x01") == "application/octet-stream"


def test_application_table_covers_every_launchable_identifier() -> None:
    # every name of the contract but "desktop" (not a program) is a program of the table, and no other
    assert set(APPLICATIONS) == set(APPLICATION_NAMES) - {DESKTOP}
    assert APPLICATIONS["terminal"].argv == ("xfce4-terminal", "--disable-server")
    assert matches(AppSpec(("thunderbird",), "thunderbird"), ("Mail", "thunderbird-default"))
    assert not matches(AppSpec(("geany",), "Geany"), ("geanyx", "Other"))


@pytest.mark.parametrize(
    ("sym", "char"),
    [(0x41, "A"), (0xE9, "é"), (0x01000000 + 0x7F8E, "美"), (0xFF0D, None)],  # Return: none
)
def test_keysym_char(sym: int, char: str | None) -> None:
    assert keys.keysym_char(sym) == char
    if char is not None:
        assert keys.char_keysym(char) == sym  # the two are each other's inverse
