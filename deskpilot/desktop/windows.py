"""application: bring a program's window to the front (launching it as the desktop user if it is not
running), or show the desktop."""

from __future__ import annotations

from deskpilot.computer import actions
from deskpilot.config import DesktopSettings
from deskpilot.desktop import apps
from deskpilot.desktop.hands import Hands
from deskpilot.desktop.input import Input, poll
from deskpilot.desktop.outcome import Outcome
from deskpilot.desktop.x11.connection import XConnection
from deskpilot.errors import ActionTimedOut

SHOW_DESKTOP_TIMEOUT_S = 5.0
FOCUS_TIMEOUT_S = 10.0


class WindowActions:
    def __init__(self, input: Input, settings: DesktopSettings, hands: Hands) -> None:
        self.input = input
        self.settings = settings
        self.hands = hands
        self.launched: dict[str, int] = {}  # application -> pid of the program we started

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
                pid = self.launched.get(name)
                if pid is None or not await self.hands.alive(pid):
                    self.launched[name] = await self.hands.launch(spec.argv)
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


def _find_window(x: XConnection, spec: apps.AppSpec) -> int:
    found = [w for w in x.client_windows() if apps.matches(spec, x.wm_class(w))]
    return found[-1] if found else 0
