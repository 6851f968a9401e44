"""The desktop user's worker: ``hands.LocalHands`` served on a Unix socket, and ``RemoteHands``, the service's
side of it.

The appliance runs the desktop service as the display's owner and this worker as the desktop user
(supervisord.conf): ``python -m deskpilot.desktop.handsd --socket PATH --peer USER``. The kernel tells each
side who the other is (SO_PEERCRED), so neither trusts a path: the worker serves only the service's user,
the service talks only to a worker of the desktop user. The worker can do no more than the desktop user
can, and the service asks it nothing the desktop user could not do anyway.

One request per connection (Unix sockets connect in microseconds): a 4-byte length, a JSON header, then
``size`` bytes of payload (a file's content); the answer has the same form, with ``error`` (the name of a
``DesktopError`` and its message) when the request failed.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import json
import logging
import os
import pwd
import signal
import socket
import struct
from collections.abc import Callable, Collection, Sequence
from pathlib import Path
from typing import Any

import orjson

from deskpilot import errors
from deskpilot.config import DesktopSettings
from deskpilot.desktop import activity, atspi, command
from deskpilot.desktop.files import DesktopUser, FileContent
from deskpilot.desktop.hands import Hands, LocalHands

log = logging.getLogger(__name__)

_LENGTH = struct.Struct(">I")
MAX_HEADER = 1 << 20
_SLICE = 1 << 20
# on_a_timer, waiting and timer_soon are asked during a settle: a worker that does not answer says no timer,
# not waiting
SETTLE_CALL_TIMEOUT_S = 0.5
MAX_WITHIN_MS = 10_000.0  # the longest timer horizon a settle asks about
# the errors an answer may name; anything else the worker raised is a 500 of the service
_ERRORS: dict[str, type[errors.DesktopError]] = {
    cls.__name__: cls
    for cls in (
        errors.InvalidAction,
        errors.FileMissing,
        errors.FileConflict,
        errors.TooLarge,
        errors.ActionTimedOut,
        errors.AccessibilityUnavailable,
    )
}


def local_hands(settings: DesktopSettings, user: DesktopUser) -> LocalHands:
    return LocalHands(
        user, settings.display, settings.files_dir, settings.max_file_bytes, settings.accessibility
    )


def peer_uid(sock: socket.socket) -> int:
    """The uid of the process at the other end of a Unix socket, as the kernel recorded it."""
    creds = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    return int(struct.unpack("3i", creds)[1])


def _head(header: dict[str, Any], payload: bytes = b"") -> bytes:
    """The length and the header of a message; its payload follows as it is (a file is never copied)."""
    data = json.dumps({**header, "size": len(payload)}).encode()
    return _LENGTH.pack(len(data)) + data


async def _send(writer: asyncio.StreamWriter, header: dict[str, Any], payload: bytes = b"") -> None:
    """A message, its payload in slices: the transport buffers (copies) only what the socket has not taken."""
    writer.write(_head(header, payload))
    view = memoryview(payload)
    for start in range(0, len(view), _SLICE):
        writer.write(view[start : start + _SLICE])
        await writer.drain()
    await writer.drain()


async def _read(reader: asyncio.StreamReader, max_payload: int) -> tuple[dict[str, Any], bytes]:
    (length,) = _LENGTH.unpack(await reader.readexactly(_LENGTH.size))
    if length > MAX_HEADER:
        raise ValueError(f"a header of {length} bytes")
    header = json.loads(await reader.readexactly(length))
    size = int(header.get("size", 0))
    if not 0 <= size <= max_payload:
        raise ValueError(f"a payload of {size} bytes")
    return header, await reader.readexactly(size)


# ------------------------------------------------------------------------------------------------ the worker


async def _answer(hands: LocalHands, header: dict[str, Any], payload: bytes) -> tuple[dict[str, Any], bytes]:
    op = header["op"]
    if op == "write":
        path = await hands.write(header["path"], payload, overwrite=bool(header["overwrite"]))
        return {"path": str(path)}, b""
    if op == "read":
        content = await hands.read(header["path"])
        return {"name": content.name, "media_type": content.media_type, "path": content.path}, content.data
    if op == "reset_home":
        return {"removed": await hands.reset_home(Path(header["skeleton"]))}, b""
    if op == "launch":
        return {"pid": await hands.launch([str(a) for a in header["argv"]])}, b""
    if op == "alive":
        return {"alive": await hands.alive(int(header["pid"]))}, b""
    if op == "stop":
        await hands.stop([int(p) for p in header["pids"]])
        return {}, b""
    if op == "command":
        result = await hands.command(command.CommandRequest.model_validate(header["request"]))
        return {"result": result.model_dump(by_alias=False)}, b""
    if op == "accessibility":
        return {}, orjson.dumps(await hands.accessibility(atspi.Query(**header["query"])))
    if op == "element":
        return {"element": await hands.element(str(header["element"]))}, b""
    if op == "focus_element":
        return {"focused": await hands.focus_element(str(header["element"]))}, b""
    if op == "accessibility_problem":
        return {"problem": await hands.accessibility_problem()}, b""
    if op == "focused_text":
        return {"text": await hands.focused_text(int(header["pid"]))}, b""
    if op == "text_state":
        return {"text": await hands.text_state(str(header["element"]))}, b""
    if op == "on_a_timer":
        return {"pids": sorted(hands.on_a_timer([int(p) for p in header["pids"]]))}, b""
    if op == "waiting":
        return {"waiting": hands.waiting([int(p) for p in header["pids"]])}, b""
    if op == "timer_soon":
        within = min(max(float(header.get("within", activity.SOON_MS)), 0.0), MAX_WITHIN_MS)
        pids, timer_threads = [int(p) for p in header["pids"]], header.get("timerThreads") is True
        return {"soon": hands.timer_soon(pids, within, timer_threads)}, b""
    raise errors.InvalidAction(f"no such operation: {op!r}")


def _optional(value: Any) -> dict[str, Any] | None:
    return dict(value) if isinstance(value, dict) else None


def serve(hands: LocalHands, path: Path, peer: int) -> Callable[[], Any]:
    """A coroutine function that serves ``hands`` on ``path`` to processes of uid ``peer`` until cancelled."""

    async def connection(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            sock = writer.get_extra_info("socket")
            if sock is None or peer_uid(sock) != peer:
                return  # not the service: nothing is read, nothing answered
            with contextlib.suppress(asyncio.IncompleteReadError, ConnectionError):
                header, payload = await _read(reader, hands.max_bytes)
                try:
                    answer, data = await _answer(hands, header, payload)
                except errors.DesktopError as exc:
                    answer, data = {"error": type(exc).__name__, "message": exc.message}, b""
                except Exception as exc:  # the service reports it as its own failure
                    log.exception("hands: %s failed", header.get("op"))
                    answer, data = {"error": "Exception", "message": f"{type(exc).__name__}: {exc}"}, b""
                await _send(writer, answer, data)
        finally:
            writer.close()

    async def run() -> None:
        _unlink(path)
        server = await asyncio.start_unix_server(connection, path)
        os.chmod(path, 0o666)  # whoever may connect is the peer check's business, not the file mode's
        async with server:
            await server.serve_forever()

    return run


def _unlink(path: Path) -> None:
    path.unlink(missing_ok=True)  # the socket of the worker before us


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m deskpilot.desktop.handsd", description=__doc__)
    parser.add_argument("--socket", type=Path, required=True, help="where to listen")
    parser.add_argument("--peer", required=True, help="the user of the desktop service, the only client")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="hands: %(message)s")
    settings = DesktopSettings()
    user = DesktopUser.lookup(settings.user, settings.home)
    hands = local_hands(settings, user)
    peer = pwd.getpwnam(args.peer).pw_uid

    async def start() -> None:
        # no write of ours is in flight yet: a temporary file in the home is a killed write's
        removed = await hands.files.as_user(hands.files.sweep)
        if removed:
            log.info("removed %d temporary files of interrupted writes", removed)
        log.info("serving %s (uid %d) on %s for uid %d", user.name, os.geteuid(), args.socket, peer)
        asyncio.get_running_loop().add_signal_handler(signal.SIGCHLD, hands.reap)
        await serve(hands, args.socket, peer)()

    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(start())


# ------------------------------------------------------------------------------------------------ the service


class RemoteHands:
    """``Hands`` done by the desktop user's worker on ``path``."""

    def __init__(
        self,
        path: Path,
        user: DesktopUser,
        files_dir: Path | None,
        max_bytes: int,
        worker_uid: int | None = None,  # who the worker runs as (DESKTOP_HANDS_USER); default: the user
    ) -> None:
        self.path = path
        self.user = user
        self.worker_uid = user.uid if worker_uid is None else worker_uid  # its socket's only trusted server
        self.root = files_dir or user.home / "Desktop"
        self.max_bytes = max_bytes

    async def _call(self, header: dict[str, Any], payload: bytes = b"") -> tuple[dict[str, Any], bytes]:
        try:
            reader, writer = await asyncio.open_unix_connection(self.path)
        except OSError as exc:
            raise errors.HandsUnavailable(
                f"the desktop user's worker does not answer ({exc.strerror or exc}); it is restarting"
            ) from None
        try:
            sock = writer.get_extra_info("socket")
            served_by = None if sock is None else peer_uid(sock)
            if served_by != self.worker_uid:
                raise errors.HandsUnavailable(
                    f"{self.path} is served by uid {served_by}, not the worker's ({self.worker_uid})"
                )
            await _send(writer, header, payload)
            answer, data = await _read(reader, self.max_bytes)
        except (asyncio.IncompleteReadError, ConnectionError, ValueError) as exc:
            raise errors.HandsUnavailable(f"the desktop user's worker went away: {exc}") from None
        finally:
            writer.close()
        if "error" in answer:
            kind = _ERRORS.get(answer["error"])
            if kind is None:
                raise RuntimeError(f"the desktop user's worker failed: {answer['message']}")
            raise kind(answer["message"])
        return answer, data

    async def write(self, path: str, data: bytes, *, overwrite: bool = True) -> Path:
        if len(data) > self.max_bytes:
            raise errors.TooLarge(f"the file is {len(data)} bytes; the limit is {self.max_bytes} bytes")
        answer, _ = await self._call({"op": "write", "path": path, "overwrite": overwrite}, data)
        return Path(answer["path"])

    async def read(self, path: str) -> FileContent:
        answer, data = await self._call({"op": "read", "path": path})
        return FileContent(data, answer["name"], len(data), answer["media_type"], answer["path"])

    async def reset_home(self, skeleton: Path) -> int:
        answer, _ = await self._call({"op": "reset_home", "skeleton": str(skeleton)})
        return int(answer["removed"])

    async def launch(self, argv: Sequence[str]) -> int:
        answer, _ = await self._call({"op": "launch", "argv": list(argv)})
        return int(answer["pid"])

    async def alive(self, pid: int) -> bool:
        answer, _ = await self._call({"op": "alive", "pid": pid})
        return bool(answer["alive"])

    async def stop(self, pids: Collection[int]) -> None:
        await self._call({"op": "stop", "pids": list(pids)})

    async def command(self, request: command.CommandRequest) -> command.CommandResult:
        answer, _ = await self._call({"op": "command", "request": request.model_dump()})
        return command.CommandResult.model_validate(answer["result"])

    async def accessibility(self, query: atspi.Query) -> dict[str, Any]:
        _, tree = await self._call({"op": "accessibility", "query": dataclasses.asdict(query)})
        answer: dict[str, Any] = orjson.loads(tree)
        return answer

    async def element(self, element: str) -> dict[str, Any]:
        answer, _ = await self._call({"op": "element", "element": element})
        return dict(answer["element"])

    async def focus_element(self, element: str) -> bool:
        answer, _ = await self._call({"op": "focus_element", "element": element})
        return bool(answer["focused"])

    async def accessibility_problem(self) -> str | None:
        answer, _ = await self._call({"op": "accessibility_problem"})
        return None if answer["problem"] is None else str(answer["problem"])

    async def focused_text(self, pid: int) -> dict[str, Any] | None:
        answer, _ = await self._call({"op": "focused_text", "pid": pid})
        return _optional(answer["text"])

    async def text_state(self, element: str) -> dict[str, Any] | None:
        answer, _ = await self._call({"op": "text_state", "element": element})
        return _optional(answer["text"])

    def on_a_timer(self, pids: Collection[int]) -> set[int]:
        answer = self._ask_now({"op": "on_a_timer", "pids": list(pids)}) if pids else None
        return {int(p) for p in answer.get("pids", [])} if answer else set()

    def waiting(self, pids: Collection[int]) -> bool:
        answer = self._ask_now({"op": "waiting", "pids": list(pids)}) if pids else None
        return bool(answer and answer.get("waiting") is True)

    def timer_soon(
        self, pids: Collection[int], within_ms: float = activity.SOON_MS, timer_threads: bool = False
    ) -> bool:
        ask = {"op": "timer_soon", "pids": list(pids), "within": within_ms, "timerThreads": timer_threads}
        answer = self._ask_now(ask) if pids else None
        return bool(answer and answer.get("soon") is True)

    def _ask_now(self, header: dict[str, Any]) -> dict[str, Any] | None:
        """A blocking call, bounded, for a settle's loop between two polls (a thread hop would cost more than
        the answer); None when the worker does not answer in time, or is not the desktop user's."""
        try:
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
                sock.settimeout(SETTLE_CALL_TIMEOUT_S)
                sock.connect(str(self.path))
                if peer_uid(sock) != self.worker_uid:
                    return None
                sock.sendall(_head(header))
                reply = sock.makefile("rb")
                (length,) = _LENGTH.unpack(reply.read(_LENGTH.size))
                answer = json.loads(reply.read(length))
                return answer if isinstance(answer, dict) else None
        except (OSError, ValueError, struct.error):
            return None

    def close(self) -> None:
        pass


def hands_for(settings: DesktopSettings, user: DesktopUser) -> Hands:
    """The worker's when ``DESKTOP_HANDS_SOCKET`` names one (the appliance), else this process's own."""
    if settings.hands_socket is not None:
        worker = pwd.getpwnam(settings.hands_user).pw_uid if settings.hands_user else None
        return RemoteHands(settings.hands_socket, user, settings.files_dir, settings.max_file_bytes, worker)
    return local_hands(settings, user)


if __name__ == "__main__":
    main()
