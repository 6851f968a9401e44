"""Everything the desktop service does as the desktop user: files, programs, commands, the home's reset.

The service drives the display as a user of its own (the display's owner); what must happen with the desktop
user's rights goes through ``Hands``. Two kinds, one interface:

- ``LocalHands`` does it in this process: as ourselves when we are the desktop user, or, when we run as root,
  on file threads whose credentials are dropped and with programs started under the user's identity
  (``files.py``, ``session.py``). The tests' services and the desktop user's worker use it.
- ``RemoteHands`` (``handsd.py``) asks the desktop user's worker, a process of its own that runs as that user
  and serves ``LocalHands`` on a Unix socket. The appliance uses it: nothing the desktop user runs can then
  signal, trace or read the service, which holds no right the user lacks and no right the user has.

The accessibility tree is read there too (``accessibility.py``): the AT-SPI bus of the desktop session
admits only the desktop user and root, and the service is neither.
"""

from __future__ import annotations

import asyncio
import contextlib
import subprocess
import time
from collections.abc import Awaitable, Collection, Sequence
from pathlib import Path
from typing import Any, Protocol

from deskpilot.desktop import accessibility, activity, atspi, command, home
from deskpilot.desktop.files import DesktopUser, FileContent, FileStore
from deskpilot.desktop.session import as_desktop_user
from deskpilot.errors import InvalidAction

EXIT_TIMEOUT_S = 2.0  # for the programs ``stop`` terminates to go before they are killed
TEXT_EVIDENCE_S = 0.25  # the bound of textChanged's reads (a few milliseconds when the application answers)


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

    def waiting(self, pids: Collection[int]) -> bool:
        """Whether every thread of ``pids`` waits with no timer due soon (``activity.waiting``: their system
        calls and timeouts, which only their user may read)."""
        ...

    def timer_soon(
        self, pids: Collection[int], within_ms: float = activity.SOON_MS, timer_threads: bool = False
    ) -> bool:
        """Whether the main thread of one of ``pids`` (or a Gecko timer thread, with ``timer_threads``) sleeps
        on a timer due within ``within_ms`` (``activity.timer_soon``)."""
        ...

    async def accessibility(self, query: atspi.Query) -> dict[str, Any]:
        """The accessibility tree ``query`` asks for (``accessibility.read_tree``), in screen pixels."""
        ...

    async def element(self, element: str) -> dict[str, Any]:
        """A live element's bounds and states; InvalidAction once it is gone."""
        ...

    async def focus_element(self, element: str) -> bool:
        """Whether ``element`` took the keyboard focus."""
        ...

    async def accessibility_problem(self) -> str | None:
        """The /health probe of the AT-SPI bus: None when it answers."""
        ...

    async def focused_text(self, pid: int) -> dict[str, Any] | None:
        """The focused text element of process ``pid``'s application (``accessibility.focused_text``)."""
        ...

    async def text_state(self, element: str) -> dict[str, Any] | None:
        """An editable text's length and digest (``accessibility.text_state``): evidence's textChanged."""
        ...

    def close(self) -> None: ...


class LocalHands:
    """The desktop user's actions done in this process (see the module docstring)."""

    def __init__(
        self,
        user: DesktopUser,
        display: str,
        files_dir: Path | None,
        max_bytes: int,
        accessibility: bool = False,
    ) -> None:
        self.user = user
        self.display = display
        self.bridges = accessibility  # the toolkits' accessibility bridges on in the programs it starts
        self.files = FileStore(user, files_dir, max_bytes)
        self.root = self.files.root
        self.max_bytes = max_bytes
        self._children: dict[int, subprocess.Popen[bytes]] = {}
        self.atspi = atspi.Atspi()  # the AT-SPI bus admits the desktop user (and root): this process's

    async def write(self, path: str, data: bytes, *, overwrite: bool = True) -> Path:
        return await self.files.write(path, data, overwrite=overwrite)

    async def read(self, path: str) -> FileContent:
        return await self.files.read(path)

    async def reset_home(self, skeleton: Path) -> int:
        return await self.files.as_user(home.home_to_skeleton, self.user.home, skeleton)

    async def launch(self, argv: Sequence[str]) -> int:
        return self._spawn(argv)  # fork and exec: a millisecond, not worth a thread

    def _spawn(self, argv: Sequence[str]) -> int:
        launch = as_desktop_user(self.user, self.display, self.bridges)
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
        self.reap()
        self._children[proc.pid] = proc
        return proc.pid

    def reap(self) -> None:
        """Wait for the programs it started that have exited (the worker calls it on SIGCHLD): a launcher
        that hands its window to a running instance (``thunar``) exits at once and would stay a zombie."""
        self._children = {pid: p for pid, p in self._children.items() if p.poll() is None}

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
        return await command.run(as_desktop_user(self.user, self.display, self.bridges), request)

    def on_a_timer(self, pids: Collection[int]) -> set[int]:
        return {pid for pid in pids if activity.on_a_timer(pid)}

    def waiting(self, pids: Collection[int]) -> bool:
        return activity.waiting(pids)

    def timer_soon(
        self, pids: Collection[int], within_ms: float = activity.SOON_MS, timer_threads: bool = False
    ) -> bool:
        return activity.timer_soon(pids, within_ms, timer_threads)

    async def accessibility(self, query: atspi.Query) -> dict[str, Any]:
        return await accessibility.read_tree(self.atspi, query)

    async def element(self, element: str) -> dict[str, Any]:
        return await accessibility.element(self.atspi, element)

    async def focus_element(self, element: str) -> bool:
        return await accessibility.focus(self.atspi, element)

    async def accessibility_problem(self) -> str | None:
        return await self.atspi.problem()

    async def focused_text(self, pid: int) -> dict[str, Any] | None:
        return await _briefly(accessibility.focused_text(self.atspi, pid))

    async def text_state(self, element: str) -> dict[str, Any] | None:
        return await _briefly(accessibility.text_state(self.atspi, element))

    def close(self) -> None:
        self.files.close()
        self.atspi.close()


async def _briefly(read: Awaitable[dict[str, Any] | None]) -> dict[str, Any] | None:
    """Evidence's reads of a text: a frozen application delays an action by ``TEXT_EVIDENCE_S`` at most,
    and a call that fails (the element gone, no Text interface) leaves textChanged absent."""
    try:
        return await asyncio.wait_for(read, TEXT_EVIDENCE_S)
    except (TimeoutError, atspi.CallFailed, InvalidAction):
        return None


def _reap(procs: list[subprocess.Popen[bytes]]) -> None:
    deadline = time.monotonic() + EXIT_TIMEOUT_S
    for proc in procs:
        try:
            proc.wait(max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
