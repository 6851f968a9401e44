"""``POST /reset``: the desktop back to a clean state between two tests, in well under a second.

1. every key and mouse button is released;
2. every application window is closed with XKillClient (its program loses the display and exits; the
   desktop's own windows, the background and the panel, stay), programs ``application`` started are
   terminated, and the reset waits (bounded) until the windows are gone and the programs they name have
   exited, so none of them writes into the home after step 3;
3. the home is brought back to its skeleton (``DESKTOP_SKELETON``) with the desktop user's rights: every
   file and directory the skeleton does not have is deleted, its files are rewritten where they differ,
   and Desktop, Documents and Downloads exist (empty but for the skeleton's launchers).

A window's ``_NET_WM_PID`` is only waited for, never signalled: any client can write any number there.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path

from deskpilot.desktop.hands import Hands
from deskpilot.desktop.input import Input, poll
from deskpilot.desktop.watchdog import bounded
from deskpilot.desktop.windows import WindowActions
from deskpilot.desktop.x11.connection import XConnection
from deskpilot.errors import FileConflict, FileMissing

EXIT_TIMEOUT_S = 2.0  # for the programs to go once their display is gone
# for each block of the reset's X calls (milliseconds when the server answers): past it a server that stopped
# answering is a 504, not a request that hangs until its caller gives up
X_TIMEOUT_S = 5.0
WHAT = "during the reset"


def default_skeleton() -> Path:
    """rootfs/home/user of the checkout (or image) the service runs from."""
    return Path(__file__).resolve().parents[2] / "rootfs" / "home" / "user"


@dataclass(frozen=True)
class ResetReport:
    closed: int  # application windows closed
    removed: int  # entries deleted from the home
    ms: float


class Reset:
    def __init__(self, input: Input, windows: WindowActions, hands: Hands, skeleton: Path | None) -> None:
        self.input = input
        self.windows = windows
        self.hands = hands
        self.skeleton = skeleton or default_skeleton()
        self.x_timeout = X_TIMEOUT_S

    async def __call__(self) -> ResetReport:
        started = time.perf_counter()
        if not self.skeleton.is_dir():
            raise FileMissing(f"no home skeleton at {self.skeleton}: set DESKTOP_SKELETON to one")
        async with self.input.lock:
            closed, pids = self._close_windows()
            await self._stop_launched()
            with self.input.connections.using() as x:
                await poll(lambda: self._no_windows(x), EXIT_TIMEOUT_S)
            await poll(lambda: not any(map(_running, pids)), EXIT_TIMEOUT_S)
        try:
            removed = await self.hands.reset_home(self.skeleton)
        except OSError as exc:
            raise FileConflict(f"the home could not be brought back to its skeleton: {exc}") from None
        return ResetReport(closed, removed, (time.perf_counter() - started) * 1000)

    def _no_windows(self, x: XConnection) -> bool:
        with bounded(x, self.x_timeout, WHAT):
            return not x.application_windows()

    def _close_windows(self) -> tuple[int, set[int]]:
        with self.input.connections.using() as x, bounded(x, self.x_timeout, WHAT):
            x.release_all()
            wids = x.application_windows()
            pids = {pid for pid in map(x.window_pid, wids) if pid > 1 and pid != os.getpid()}
            for wid in wids:
                x.kill_client(wid)
            x.sync()
        return len(wids), pids

    async def _stop_launched(self) -> None:
        pids = list(self.windows.launched.values())
        self.windows.launched.clear()
        await self.hands.stop(pids)


def _running(pid: int) -> bool:
    """The process exists and is not a zombie (one that exited but nobody reaped yet)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[-1].split()[0] != "Z"
