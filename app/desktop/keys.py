"""Key names as clients send them -> X keysyms, independent of any X connection.

Accepted, case-insensitively: the common aliases (``ctrl``, ``esc``, ``pgup``, ``arrowup``, ``win`` ...),
nut-js names (``LeftControl``, ``Num1``, ``NumPad5``), X keysym names (``Return``, ``Page_Up``, ``KP_5``)
and any single character. Unknown names raise ``ValueError`` with the closest valid names.
"""

from __future__ import annotations

import difflib
from functools import cache

from app.desktop import x11

# fmt: off
_ALIASES: dict[str, str] = {
    # modifiers
    "ctrl": "Control_L", "control": "Control_L", "lctrl": "Control_L", "leftctrl": "Control_L",
    "leftcontrol": "Control_L", "rctrl": "Control_R", "rightctrl": "Control_R", "rightcontrol": "Control_R",
    "shift": "Shift_L", "lshift": "Shift_L", "leftshift": "Shift_L", "rshift": "Shift_R",
    "rightshift": "Shift_R",
    "alt": "Alt_L", "lalt": "Alt_L", "leftalt": "Alt_L", "option": "Alt_L", "ralt": "Alt_R",
    "rightalt": "Alt_R", "altgr": "ISO_Level3_Shift",
    "super": "Super_L", "lsuper": "Super_L", "leftsuper": "Super_L", "win": "Super_L", "windows": "Super_L",
    "leftwin": "Super_L", "lwin": "Super_L", "cmd": "Super_L", "command": "Super_L", "leftcmd": "Super_L",
    "meta": "Super_L", "leftmeta": "Super_L", "rsuper": "Super_R", "rightsuper": "Super_R",
    "rightwin": "Super_R", "rwin": "Super_R", "rightcmd": "Super_R", "rightmeta": "Super_R",
    # editing and navigation
    "esc": "Escape", "escape": "Escape", "enter": "Return", "return": "Return", "tab": "Tab",
    "space": "space", "spacebar": "space", "backspace": "BackSpace", "delete": "Delete", "del": "Delete",
    "insert": "Insert", "ins": "Insert", "home": "Home", "end": "End",
    "pgup": "Prior", "pageup": "Prior", "pgdn": "Next", "pgdown": "Next", "pagedown": "Next",
    "up": "Up", "arrowup": "Up", "down": "Down", "arrowdown": "Down", "left": "Left", "arrowleft": "Left",
    "right": "Right", "arrowright": "Right",
    "printscreen": "Print", "print": "Print", "prtsc": "Print", "prtscr": "Print", "print_screen": "Print",
    "capslock": "Caps_Lock", "numlock": "Num_Lock", "scrolllock": "Scroll_Lock", "pause": "Pause",
    "menu": "Menu", "contextmenu": "Menu", "apps": "Menu",
    # nut-js punctuation and keypad names
    "grave": "grave", "backtick": "grave", "minus": "minus", "equal": "equal", "equals": "equal",
    "leftbracket": "bracketleft", "rightbracket": "bracketright", "backslash": "backslash",
    "semicolon": "semicolon", "quote": "apostrophe", "comma": "comma", "period": "period", "dot": "period",
    "slash": "slash", "add": "KP_Add", "subtract": "KP_Subtract", "multiply": "KP_Multiply",
    "divide": "KP_Divide", "decimal": "KP_Decimal", "clear": "Clear",
    "audiomute": "XF86_AudioMute", "audiovoldown": "XF86_AudioLowerVolume",
    "audiovolup": "XF86_AudioRaiseVolume", "audioplay": "XF86_AudioPlay", "audiostop": "XF86_AudioStop",
    "audiopause": "XF86_AudioPause", "audioprev": "XF86_AudioPrev", "audionext": "XF86_AudioNext",
}
# fmt: on
_ALIASES.update({f"f{n}": f"F{n}" for n in range(1, 25)})
_ALIASES.update({f"num{n}": str(n) for n in range(10)})
_ALIASES.update({f"numpad{n}": f"KP_{n}" for n in range(10)})

# type_text control characters -> keysym names; other control characters cannot be typed
CONTROL_CHARS: dict[str, str] = {
    "\n": "Return",
    "\r": "Return",
    "\t": "Tab",
    "\b": "BackSpace",
    "\x1b": "Escape",
    "\x7f": "Delete",
}


def char_keysym(char: str) -> int:
    """The keysym that types ``char``: Latin-1 keysyms equal the code point, the rest are 0x1000000 + U."""
    if char in CONTROL_CHARS:
        return _keysym_table()[CONTROL_CHARS[char].lower()]
    code = ord(char)
    if 0x20 <= code <= 0x7E or 0xA0 <= code <= 0xFF:
        return code
    return 0x01000000 + code


def is_typeable(char: str) -> bool:
    return char in CONTROL_CHARS or not (ord(char) < 0x20 or 0x7F <= ord(char) < 0xA0)


@cache
def _keysym_table() -> dict[str, int]:
    """Lower-cased X keysym names -> keysym (the lower-case name wins when two differ only in case)."""
    table: dict[str, int] = {}
    for name, sym in sorted(x11.keysym_names().items(), key=lambda kv: kv[0].islower()):
        table[name.lower()] = sym
    return table


def _normalise(name: str) -> str:
    return name.strip().lower().replace("-", "").replace(" ", "")


def resolve(name: str) -> int:
    """The X keysym for a key name; ``ValueError`` naming the closest valid names when unknown."""
    if len(name) == 1:
        if not is_typeable(name):
            raise ValueError(f"key {name!r} is a control character; use a key name such as 'enter' or 'tab'")
        return char_keysym(name)
    table = _keysym_table()
    norm = _normalise(name)
    alias = _ALIASES.get(norm) or _ALIASES.get(norm.replace("_", ""))
    if alias is not None:
        return table[alias.lower()] if len(alias) > 1 else char_keysym(alias)
    lower = name.strip().lower()
    # python-xlib spells the XF86 keysyms "XF86_AudioMute"; X tools write "XF86AudioMute"
    sym = table.get(lower) or (table.get("xf86_" + lower[4:]) if lower.startswith("xf86") else None)
    if sym is not None:
        return sym
    raise ValueError(f"unknown key name {name!r}{_suggest(norm)}")


def _suggest(norm: str) -> str:
    close = difflib.get_close_matches(norm, [*_ALIASES, *_common_keysyms()], n=3, cutoff=0.6)
    if not close:
        return "; use names like 'ctrl', 'shift', 'enter', 'tab', 'esc', 'f5', 'pgup' or a single character"
    return "; did you mean " + " or ".join(repr(c) for c in close) + "?"


@cache
def _common_keysyms() -> list[str]:
    return [n for n in _keysym_table() if not n.startswith(("xf86", "kp_", "3270", "braille", "ch"))][:2000]
