"""Application identifiers of the API -> the program that is launched and the window class it shows.

This table is the single source of truth: the appliance's .desktop launchers in rootfs/ carry the same
commands, and a test compares the two.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class AppSpec:
    argv: tuple[str, ...]
    # WM_CLASS class (or instance) of the main window, case-insensitive; a "-suffix" is accepted too,
    # as Debian's Thunderbird names its class after the profile ("thunderbird-default")
    wm_class: str


APPLICATIONS: dict[str, AppSpec] = {
    "browser": AppSpec(("firefox-esr",), "firefox-esr"),
    "password_manager": AppSpec(("keepassxc",), "KeePassXC"),
    "email_client": AppSpec(("thunderbird",), "thunderbird"),
    "code_editor": AppSpec(("geany",), "Geany"),
    "terminal": AppSpec(("xfce4-terminal", "--disable-server"), "Xfce4-terminal"),
    "directory": AppSpec(("thunar",), "Thunar"),
}

# "desktop" is not a program: it shows the desktop (EWMH _NET_SHOWING_DESKTOP)
DESKTOP = "desktop"

# window classes that paste with ctrl+shift+v instead of ctrl+v
TERMINAL_CLASSES = frozenset(
    c.lower()
    for c in (
        "Xfce4-terminal",
        "Gnome-terminal",
        "konsole",
        "Tilix",
        "Terminator",
        "kitty",
        "Alacritty",
        "Lxterminal",
        "Mate-terminal",
        "qterminal",
        "URxvt",
        "st-256color",
        "wezterm",
        "foot",
    )
)


def matches(spec: AppSpec, wm_class: tuple[str, str]) -> bool:
    want = spec.wm_class.lower()
    return any(part.lower() == want or part.lower().startswith(want + "-") for part in wm_class)
