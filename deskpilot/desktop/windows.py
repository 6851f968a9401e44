"""application: bring a program's window to the front (launching it as the desktop user if it is not
running), or show the desktop."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

from deskpilot.computer import actions
from deskpilot.config import DesktopSettings
from deskpilot.desktop import apps
from deskpilot.desktop.files import DesktopUser
from deskpilot.desktop.input import Input, poll
from deskpilot.desktop.outcome import Outcome
from deskpilot.desktop.x11 import XConnection
from deskpilot.errors import ActionTimedOut, InvalidAction

SHOW_DESKTOP_TIMEOUT_S = 5.0
FOCUS_TIMEOUT_S = 10.0


class WindowActions:
    def __init__(self, input: Input, settings: DesktopSettings, user: DesktopUser) -> None:
        self.input = input
        self.settings = settings
        self.user = user
        self.launched: dict[str, subprocess.Popen[bytes]] = {}

    async def application(self, action: actions.Application) -> Outcome:
        async with self.input.lock:
            if action.application == apps.DESKTOP:
                await self._show_desktop()
            else:
                await self._switch_to(action.application, apps.APPLICATIONS[action.application])
        return Outcome()

    async def _show_desktop(self) -> None:
        with self.input.connections.using() as x:
            x.show_desktop(True)
            if not await poll(x.showing_desktop, SHOW_DESKTOP_TIMEOUT_S):
                raise ActionTimedOut(
                    f"the window manager did not show the desktop within {SHOW_DESKTOP_TIMEOUT_S:g} s"
                )

    async def _switch_to(self, name: str, spec: apps.AppSpec) -> None:
        timeout = self.settings.app_timeout
        with self.input.connections.using() as x:
            wid = _find_window(x, spec)
            if not wid:
                proc = self.launched.get(name)
                if proc is None or proc.poll() is not None:
                    self.launched[name] = self._launch(spec)
                found: list[int] = []

                def appeared() -> bool:
                    found[:] = [_find_window(x, spec)]
                    return bool(found[0])

                if not await poll(appeared, timeout):
                    raise ActionTimedOut(f"{name} ({spec.argv[0]}) showed no window within {timeout:g} s")
                wid = found[0]
            x.activate(wid)
            x.maximize(wid)
            x.sync()

            def focused() -> bool:
                if x.active_window() == wid and x.is_viewable(wid):
                    return True
                x.activate(wid)  # a window that just mapped may have refused focus once
                return False

            focus_timeout = min(timeout, FOCUS_TIMEOUT_S)
            if not await poll(focused, focus_timeout, interval=0.05):
                raise ActionTimedOut(f"{name}'s window did not get the focus within {focus_timeout:g} s")

    def _launch(self, spec: apps.AppSpec) -> subprocess.Popen[bytes]:
        """Start a program as the desktop user (when the service runs as root) or as ourselves."""
        user = self.user
        creds: dict[str, Any] = {}
        if os.geteuid() == 0 and user.uid != 0:
            env = {
                "HOME": str(user.home),
                "USER": user.name,
                "LOGNAME": user.name,
                "DISPLAY": self.settings.display,
                "PATH": "/usr/local/bin:/usr/bin:/bin",
                "SHELL": "/bin/bash",
                "LANG": os.environ.get("LANG", "C.UTF-8"),
                "NO_AT_BRIDGE": "1",
            }
            if "XAUTHORITY" in os.environ:  # the display's cookie (the appliance's is the desktop user's)
                env["XAUTHORITY"] = os.environ["XAUTHORITY"]
            creds = {"user": user.uid, "group": user.gid, "extra_groups": []}
            cwd = user.home
        else:  # as ourselves, in our own environment (the appliance gives it the desktop session's), less
            # the security settings (the token's digest among them): an application needs none of them
            env = {k: v for k, v in os.environ.items() if not k.upper().startswith("DESKPILOT_")}
            env |= {"DISPLAY": self.settings.display, "NO_AT_BRIDGE": "1"}
            cwd = Path.home()
        try:
            return subprocess.Popen(
                list(spec.argv),
                env=env,
                cwd=cwd,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                start_new_session=True,
                **creds,
            )
        except OSError as exc:
            raise InvalidAction(f"cannot start {spec.argv[0]}: {exc.strerror}; is it installed?") from None


def _find_window(x: XConnection, spec: apps.AppSpec) -> int:
    found = [w for w in x.client_windows() if apps.matches(spec, x.wm_class(w))]
    return found[-1] if found else 0
