"""The client's side of the action channel (``GET /computer-use/ws``, docs/desktop-api.md): one WebSocket kept
open, one message per action, the screenshots as binary frames.

``Channel`` (blocking) sends one action and reads its answer under a lock; ``AsyncChannel`` lets any number of
coroutines send at once, and a reader task hands each answer to its sender by ``id``. An answer comes back
as the HTTP route's body and status: a screenshot's ``data.image`` is the image's bytes, not base64
(``http_body`` makes the HTTP shape of it). When no socket opens, ``Unavailable`` sends the action by HTTP
(and every later one too when the service refused the upgrade as such: an older service, a proxy without
WebSockets); when an open socket breaks, what was in flight fails with status 0 (it may or may not have
run) and the next action opens a new one.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import threading
from collections.abc import Iterator
from typing import Any

import orjson
import pybase64
from websockets import ConnectionClosed, InvalidHandshake, InvalidStatus
from websockets.asyncio.client import ClientConnection as AsyncConnection
from websockets.asyncio.client import connect as async_connect
from websockets.sync.client import ClientConnection
from websockets.sync.client import connect as sync_connect

PATH = "/computer-use/ws?frames=binary"
MAX_MESSAGE = 2 << 20  # the service's limit (deskpilot/desktop/channel.py): larger actions go by HTTP
Answer = tuple[int, dict[str, Any]]  # (status, body) as HTTP would answer


class Unavailable(Exception):
    """No socket: send this action by HTTP; ``lasting`` when the service refused the upgrade as such (then
    speak HTTP to it from now on), not when it could not be reached (HTTP will say so, or do better)."""

    def __init__(self, why: str, lasting: bool) -> None:
        super().__init__(why)
        self.lasting = lasting


class Broken(Exception):
    """The socket closed or failed with this action in flight: it may or may not have run."""


def ws_url(base_url: str) -> str:
    return "ws" + base_url.removeprefix("http") + PATH


def fits(message: bytes) -> bool:
    return len(message) <= MAX_MESSAGE


def http_body(body: dict[str, Any]) -> dict[str, Any]:
    """The answer as ``POST /computer-use`` gives it: the image in base64."""
    data = body.get("data")
    if isinstance(data, dict) and isinstance(data.get("image"), bytes):
        data["image"] = pybase64.b64encode_as_string(data["image"])
    return body


def _head(raw: str | bytes) -> tuple[Any, int, dict[str, Any], int | None]:
    """(id, status, body, the length of an image to come) of an answer's head."""
    body = orjson.loads(raw)
    ident, status = body.pop("id", None), int(body.pop("status", 0))
    data = body.get("data")
    size = data.pop("imageBytes", None) if isinstance(data, dict) else None
    return ident, status, body, size


def _with_image(body: dict[str, Any], image: bytes) -> dict[str, Any]:
    body["data"] = {"image": image, **body["data"]}
    return body


def _image(frame: str | bytes) -> bytes:
    if isinstance(frame, str):
        raise ConnectionError("the action channel sent text where an image's binary frame was due")
    return frame


def connect_options(headers: dict[str, str], timeout: float) -> dict[str, Any]:
    """Both clients' handshake: the token's header, no limit on an answer's size, and no per-message deflate
    offered (a PNG is compressed already: zlib over one costs more than it saves)."""
    return {"additional_headers": headers, "open_timeout": timeout, "max_size": None, "compression": None}


@contextlib.contextmanager
def opening() -> Iterator[None]:
    """A socket that does not open: ``Unavailable``, lasting when the service refused the upgrade as such."""
    try:
        yield
    except (InvalidHandshake, OSError, TimeoutError) as exc:
        raise Unavailable(f"the action channel could not open: {exc!r}", _refused(exc)) from exc


def _refused(exc: Exception) -> bool:
    """A refusal of the upgrade as such (not a failure to reach the service, nor one of its 401s)."""
    return isinstance(exc, InvalidStatus) and exc.response.status_code in (400, 403, 404, 405, 426)


class Channel:
    """The blocking client's socket (``Desktop``): one action at a time, under a lock."""

    def __init__(self, base_url: str, headers: dict[str, str], timeout: float) -> None:
        self.url, self._headers, self._timeout = ws_url(base_url), headers, timeout
        self._ws: ClientConnection | None = None
        self._lock = threading.Lock()

    def call(self, message: bytes) -> Answer:
        with self._lock:
            ws = self._ws or self._open()
            try:
                ws.send(message)
                _, status, body, size = _head(ws.recv(self._timeout))
                if size is not None:
                    body = _with_image(body, _image(ws.recv(self._timeout)))
            except (ConnectionClosed, OSError, TimeoutError) as exc:
                self.close()  # an answer may still come: this socket can no longer be trusted
                raise Broken(f"the action channel broke: {exc!r}") from exc
            return status, body

    def _open(self) -> ClientConnection:
        with opening():
            self._ws = sync_connect(self.url, **connect_options(self._headers, self._timeout))
        return self._ws

    def close(self) -> None:
        if self._ws is not None:
            self._ws.close()
            self._ws = None


class AsyncChannel:
    """The asyncio client's socket (``AsyncDesktop``): senders in any number, answers matched by ``id``."""

    def __init__(self, base_url: str, headers: dict[str, str], timeout: float) -> None:
        self.url, self._headers, self._timeout = ws_url(base_url), headers, timeout
        self._ws: AsyncConnection | None = None
        self._reader: asyncio.Task[None] | None = None
        self._opening = asyncio.Lock()
        self._sending = asyncio.Lock()
        self._pending: dict[int, asyncio.Future[Answer]] = {}
        self._ids = itertools.count(1)

    async def call(self, message: bytes) -> Answer:
        """``message``, a JSON object, sent with an ``id`` of ours spliced in as its first field."""
        ws = self._ws or await self._open()
        ident = next(self._ids)
        answer: asyncio.Future[Answer] = asyncio.get_running_loop().create_future()
        self._pending[ident] = answer
        try:
            async with self._sending:  # whole messages, in the order their futures were made
                await ws.send(b'{"id":%d,' % ident + message[1:])
            async with asyncio.timeout(self._timeout):
                return await answer
        except (ConnectionClosed, OSError) as exc:
            raise Broken(f"the action channel broke: {exc!r}") from exc
        finally:
            self._pending.pop(ident, None)

    async def _open(self) -> AsyncConnection:
        async with self._opening:
            if self._ws is None:
                with opening():
                    ws = await async_connect(self.url, **connect_options(self._headers, self._timeout))
                self._ws, self._reader = ws, asyncio.create_task(self._read(ws))
            return self._ws

    async def _read(self, ws: AsyncConnection) -> None:
        try:
            async for raw in ws:
                ident, status, body, size = _head(raw)
                if size is not None:
                    body = _with_image(body, _image(await ws.recv()))
                answer = self._pending.get(ident)
                if answer is not None and not answer.done():
                    answer.set_result((status, body))
            failure = Broken("the action channel was closed by the service")
        except (ConnectionClosed, OSError) as exc:
            failure = Broken(f"the action channel broke: {exc!r}")
        if self._ws is ws:
            self._ws = None
        for answer in self._pending.values():  # in flight on this socket: may or may not have run
            if not answer.done():
                answer.set_exception(failure)

    async def aclose(self) -> None:
        ws, reader, self._ws = self._ws, self._reader, None
        if ws is not None:
            await ws.close()
        if reader is not None:
            await reader
