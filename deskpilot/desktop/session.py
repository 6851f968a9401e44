"""How a program starts as the desktop user: its environment, working directory and credentials.

Applications (``application``) and commands (``POST /command``) start the same way. When the service runs
as root (the appliance's fallback, and the tests), they get the desktop user's identity and a clean session
environment with the display's cookie; otherwise they run as ourselves, in our environment (the appliance
gives it the desktop session's), less the security settings (the token's digest among them), which no
program of the desktop needs.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from deskpilot.desktop.files import DesktopUser

# Accessibility in every toolkit of the desktop when asked (DESKTOP_ACCESSIBILITY), so the accessibility
# action can read their trees: GTK's bridge loads unless NO_AT_BRIDGE is set; Firefox and Thunderbird turn
# theirs on for GNOME_ACCESSIBILITY; Qt (KeePassXC) only when a screen reader is said to run, unless told
# always.
ACCESSIBILITY = {"GNOME_ACCESSIBILITY": "1", "QT_LINUX_ACCESSIBILITY_ALWAYS_ON": "1", "QT_ACCESSIBILITY": "1"}
NO_ACCESSIBILITY = {"NO_AT_BRIDGE": "1"}
PASSED = ("XAUTHORITY", "DBUS_SESSION_BUS_ADDRESS", "AT_SPI_BUS_ADDRESS")


@dataclass(frozen=True)
class Launch:
    env: dict[str, str]
    cwd: Path
    creds: dict[str, Any] = field(default_factory=dict)  # Popen's user, group, extra_groups


def as_desktop_user(user: DesktopUser, display: str, accessibility: bool = False) -> Launch:
    toolkits = ACCESSIBILITY if accessibility else NO_ACCESSIBILITY
    if os.geteuid() == 0 and user.uid != 0:
        env = {
            "HOME": str(user.home),
            "USER": user.name,
            "LOGNAME": user.name,
            "DISPLAY": display,
            "PATH": "/usr/local/bin:/usr/bin:/bin",
            "SHELL": "/bin/bash",
            "LANG": os.environ.get("LANG", "C.UTF-8"),
            **toolkits,
        }
        # the display's cookie (the appliance's is the desktop user's) and the session's buses
        env |= {name: os.environ[name] for name in PASSED if name in os.environ}
        return Launch(env, user.home, {"user": user.uid, "group": user.gid, "extra_groups": []})
    env = {k: v for k, v in os.environ.items() if not k.upper().startswith("DESKPILOT_")}
    env |= {"DISPLAY": display, **toolkits}
    if accessibility:
        env.pop("NO_AT_BRIDGE", None)
    return Launch(env, Path.home())
