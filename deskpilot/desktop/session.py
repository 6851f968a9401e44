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


@dataclass(frozen=True)
class Launch:
    env: dict[str, str]
    cwd: Path
    creds: dict[str, Any] = field(default_factory=dict)  # Popen's user, group, extra_groups


def as_desktop_user(user: DesktopUser, display: str) -> Launch:
    if os.geteuid() == 0 and user.uid != 0:
        env = {
            "HOME": str(user.home),
            "USER": user.name,
            "LOGNAME": user.name,
            "DISPLAY": display,
            "PATH": "/usr/local/bin:/usr/bin:/bin",
            "SHELL": "/bin/bash",
            "LANG": os.environ.get("LANG", "C.UTF-8"),
            "NO_AT_BRIDGE": "1",
        }
        if "XAUTHORITY" in os.environ:  # the display's cookie (the appliance's is the desktop user's)
            env["XAUTHORITY"] = os.environ["XAUTHORITY"]
        return Launch(env, user.home, {"user": user.uid, "group": user.gid, "extra_groups": []})
    env = {k: v for k, v in os.environ.items() if not k.upper().startswith("DESKPILOT_")}
    env |= {"DISPLAY": display, "NO_AT_BRIDGE": "1"}
    return Launch(env, Path.home())
