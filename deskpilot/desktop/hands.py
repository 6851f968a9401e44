"""Everything the desktop service does as the desktop user: files, programs, commands, the home's reset.

The service drives the display as a user of its own (the display's owner); what must happen with the desktop
user's rights goes through ``Hands``. Two kinds, one interface:

- ``LocalHands`` does it in this process: as ourselves when we are the desktop user, or, when we run as root,
  on file threads whose credentials are dropped and with programs started under the user's identity
  (``files.py``, ``session.py``). The tests' services and the desktop user's worker use it.
- ``RemoteHands`` (``handsd.py``) asks the desktop user's worker, a process of its own that runs as that user
  and serves ``LocalHands`` on a Unix socket. The appliance uses it: nothing the desktop user runs can then
  signal, trace or read the service, which holds no right the user lacks and no right the user has.
"""

from __future__ import annotations

import asyncio
import contextlib
import subprocess
import time
from collections.abc import Collection, Sequence
from pathlib import Path
from typing import Protocol

from deskpilot.desktop import activity, command, home
from deskpilot.desktop.files import DesktopUser, FileContent, FileStore
from deskpilot.desktop.session import as_desktop_user
from deskpilot.errors import InvalidAction

EXIT_TIMEOUT_S = 2.0  # for the programs ``stop`` terminates to go before they are killed


class Hands(Protocol):
    user: DesktopUser
    root: Path  # where relative file paths resolve
    max_bytes: int

    async def write(self, path: str, data: bytes, *, overwrite: bool = True) -> Path: ...
    async def read(self, path: str) -> FileContent: ...
    async def reset_home(self, skeleton: Path) -> int:
        """The home back to ``skeleton``; how many entries were deleted (``home.home_to_skeleton``)."""
        ...

    async def launch(self, argv: Sequence[str]) -> int:
        """Start a program of the desktop (in a session of its own); its pid."""
        ...

    async def alive(self, pid: int) -> bool:
        """Whether a program ``launch`` started still runs."""
        ...

    async def stop(self, pids: Collection[int]) -> None:
        """Terminate programs ``launch`` started and wait (bounded) for them; killed if they linger."""
        ...

    async def command(self, request: command.CommandRequest) -> command.CommandResult: ...
    def on_a_timer(self, pids: Collection[int]) -> set[int]:
        """Those of ``pids`` asleep on a timer (their wait channel, which only their user may read)."""
        ...

    def close(self) -> None: ...


class LocalHands:
    """The desktop user's actions done in this process (see the module docstring)."""

    def __init__(self, user: DesktopUser, display: str, files_dir: Path | None, max_bytes: int) -> None:
        self.user = user
        self.display = display
        self.files = FileStore(user, files_dir, max_bytes)
        self.root = self.files.root
        self.max_bytes = max_bytes
        self._children: dict[int, subprocess.Popen[bytes]] = {}

    async def write(self, path: str, data: bytes, *, overwrite: bool = True) -> Path:
        return await self.files.write(path, data, overwrite=overwrite)

    async def read(self, path: str) -> FileContent:
        return await self.files.read(path)

    async def reset_home(self, skeleton: Path) -> int:
        return await self.files.as_user(home.home_to_skeleton, self.user.home, skeleton)

    async def launch(self, argv: Sequence[str]) -> int:
        return self._spawn(argv)  # fork and exec: a millisecond, not worth a thread

    def _spawn(self, argv: Sequence[str]) -> int:
        launch = as_desktop_user(self.user, self.display)
        try:
            proc = subprocess.Popen(
                list(argv),
                env=launch.env,
                cwd=launch.cwd,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                start_new_session=True,
                **launch.creds,
            )
        except OSError as exc:
            raise InvalidAction(f"cannot start {argv[0]}: {exc.strerror}; is it installed?") from None
        self._children = {pid: p for pid, p in self._children.items() if p.poll() is None}
        self._children[proc.pid] = proc
        return proc.pid

    async def alive(self, pid: int) -> bool:
        proc = self._children.get(pid)
        return proc is not None and proc.poll() is None

    async def stop(self, pids: Collection[int]) -> None:
        procs = [p for p in map(self._children.pop, pids, [None] * len(pids)) if p is not None]
        for proc in procs:
            with contextlib.suppress(ProcessLookupError):
                proc.terminate()
        await asyncio.to_thread(_reap, procs)

    async def command(self, request: command.CommandRequest) -> command.CommandResult:
        return await command.run(as_desktop_user(self.user, self.display), request)

    def on_a_timer(self, pids: Collection[int]) -> set[int]:
        return {pid for pid in pids if activity.on_a_timer(pid)}

    def close(self) -> None:
        self.files.close()


def _reap(procs: list[subprocess.Popen[bytes]]) -> None:
    deadline = time.monotonic() + EXIT_TIMEOUT_S
    for proc in procs:
        try:
            proc.wait(max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
