"""The body of a ``POST /computer-use`` (and of its Bytebot twin, and of ``/command``): held within a budget,
read while it streams, never more than the largest valid request, and a big file's base64 decoded from the
body itself.

Memory, for a write_file of a file of N bytes (its base64 is 4N/3): the body is read into one buffer of its
declared length (no growth, no copies); its JSON is parsed without the base64 (``parse_action_body``), which
is decoded from the buffer; the buffer is let go before the file is written. A write holds at most 4N/3 + N
bytes, where parsing the whole body held 4N/3 more for orjson's copy of the string (twice that while orjson
built it). The bodies of concurrent requests are held within ``DESKTOP_BODY_BUDGET_BYTES`` (``BodyBudget``,
``BodyGate``).
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import secrets
from collections import deque

import orjson
import pybase64
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from deskpilot.computer import actions
from deskpilot.config import DesktopSettings
from deskpilot.desktop import heap
from deskpilot.desktop.files import base64_size, max_request_bytes
from deskpilot.errors import DesktopError, InvalidAction, TooLarge

# Bodies up to this size are never held back: every action's but a write_file's of a file of 0.75 MiB or
# more (a type_text of 100,000 characters, each escaped, is 1.2 MB)
SMALL_BODY = 1 << 20
RETRY_AFTER_S = 5
_DATA_KEY = re.compile(rb'"data"[ \t\n\r]*:[ \t\n\r]*"')


async def read_action_body(request: Request) -> bytearray:
    """The request body, refused with 413 as soon as it is known to pass the limit: from its Content-Length
    before reading any of it, else while its chunks arrive, so no more than the limit is ever held."""
    limit = max_request_bytes(request.app.state.controller.settings.max_file_bytes)
    length = request.headers.get("content-length", "")
    if length.isdigit() and "chunked" not in request.headers.get("transfer-encoding", ""):
        if int(length) > limit:
            raise body_too_large(limit)
        return await _read_declared(request, int(length))
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > limit:
            raise body_too_large(limit)
    return body


async def _read_declared(request: Request, length: int) -> bytearray:
    """A body of a known length, into one buffer of that length as its chunks arrive; the buffer is made
    once the first chunk came (before it, the body waits for its turn in the budget: ``BodyGate``)."""
    body = bytearray()
    filled = 0
    async for chunk in request.stream():
        end = filled + len(chunk)
        if end > length:
            raise InvalidAction("the request body is longer than its Content-Length")
        if chunk and not body:
            body = bytearray(length)
        body[filled:end] = chunk  # as long as what it replaces: copied in place
        filled = end
    del body[filled:]  # a body that ended early (the client went away) is cut where it ended
    return body


def body_too_large(limit: int) -> TooLarge:
    # only a write_file body can be this large: answer as write_file fails, with `message` too
    return TooLarge(
        f"the request body is larger than {limit} bytes, the most a write_file of a file at the limit "
        "(DESKTOP_MAX_FILE_BYTES) needs",
        file_action=True,
    )


# ------------------------------------------------------------------------------------------ parsing


def parse_action_body(body: bytearray) -> actions.Action:
    """The action of a request body (``actions.parse_action_json``, the same answers); a write_file whose
    base64 makes most of the body keeps it where it is (``WriteFile.lift``) instead of a copy in a string."""
    if len(body) > SMALL_BODY:
        action = _lifted_write(body)
        if action is not None:
            return action
    return actions.parse_action_json(body)


def _lifted_write(body: bytearray) -> actions.WriteFile | None:
    """The write_file ``body`` holds, its ``data`` a view of the body; None when it is not one with a plain
    (unescaped) base64 string, which the whole body's parse then answers.

    The JSON is parsed with the string's content replaced by a random token: when ``data`` is that token,
    found once, the string is the data's, and the body is the same JSON with the base64 in its place (the
    base64 holds no quote, backslash or control character: its decoding checks every byte)."""
    span = _data_span(body)
    if span is None:
        return None
    start, end = span
    token = secrets.token_hex(16)
    stub = body[:start] + token.encode() + body[end:]
    try:
        fields = orjson.loads(stub)
    except orjson.JSONDecodeError:
        return None
    if not isinstance(fields, dict) or fields.get("action") != "write_file" or fields.get("data") != token:
        return None
    if stub.count(token.encode()) != 1:
        return None
    action = actions.parse_action({**fields, "data": ""})
    assert isinstance(action, actions.WriteFile)
    action.lift(memoryview(body)[start:end])
    return action


def _data_span(body: bytearray) -> tuple[int, int] | None:
    """Where the content of a ``"data": "..."`` string that makes most of ``body`` lies, if it holds no
    backslash (an escape: ``\\/`` is JSON for ``/``)."""
    at = 0
    while (at := body.find(b'"data"', at)) >= 0:
        key = _DATA_KEY.match(body, at)
        at += 1
        if key is None:
            continue
        start = key.end()
        end = body.find(b'"', start)
        if end < 0:
            return None
        if 2 * (end - start) < len(body):
            at = end
            continue
        return None if body.find(b"\\", start, end) >= 0 else (start, end)
    return None


def decode_data(action: actions.WriteFile, limit: int) -> bytes:
    """The content of a write_file (of at most ``limit`` bytes), its base64 let go of (a body it was lifted
    from is freed here, before the file is written)."""
    encoded = action.take_data()
    try:
        if len(encoded) > base64_size(limit) + 4:
            raise TooLarge(f"the file is larger than the limit of {limit} bytes")
        heap.before_large(len(encoded) * 3 // 4)  # the file's bytes, made below the mmap threshold
        try:
            return pybase64.b64decode(encoded, validate=True)
        except ValueError:
            # the body it was lifted from may not be JSON: then say so, as its parse would have
            body = encoded.obj if isinstance(encoded, memoryview) else None
            if isinstance(body, bytearray):
                actions.load_json(body)
            raise InvalidAction("data is not valid base64 (standard alphabet, with padding)") from None
    finally:
        if isinstance(encoded, memoryview):
            encoded.release()


# ------------------------------------------------------------------------------------------- budget


class BodyBudgetFull(DesktopError):
    """A request body waited its turn within the budget for longer than ``DESKTOP_BODY_WAIT``."""

    status = 503
    retry_after = RETRY_AFTER_S


class BodyBudget:
    """At most ``capacity`` bytes of request bodies are read and handled at a time: a body that would pass it
    waits its turn, first come first served, at most ``wait`` seconds (then ``TimeoutError``). A body larger
    than the whole budget is let in alone."""

    def __init__(self, capacity: int, wait: float) -> None:
        self.capacity, self.wait = capacity, wait
        self.held = 0
        self._queue: deque[tuple[int, asyncio.Future[None]]] = deque()

    @property
    def waiting(self) -> int:
        """How many bodies are waiting their turn."""
        return sum(not turn.done() for _, turn in self._queue)

    async def acquire(self, size: int) -> int:
        """Hold ``size`` bytes of the budget (at most all of it) once they are free; what to ``release``."""
        size = min(size, self.capacity)
        if not self._queue and self.held + size <= self.capacity:
            self.held += size
            return size
        turn: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        entry = (size, turn)
        self._queue.append(entry)
        try:
            async with asyncio.timeout(self.wait):
                await turn
        except BaseException:
            if turn.done() and not turn.cancelled():  # its turn came as the wait ended: give it back
                self.release(size)
            else:
                with contextlib.suppress(ValueError):
                    self._queue.remove(entry)
                self._admit()  # those behind it may fit now
            raise
        return size

    def release(self, size: int) -> None:
        self.held -= size
        self._admit()

    def _admit(self) -> None:
        while self._queue:
            size, turn = self._queue[0]
            if not turn.done():
                if self.held + size > self.capacity:
                    return
                self.held += size
                turn.set_result(None)
            self._queue.popleft()


class BodyGate:
    """ASGI middleware: a request's body takes its share of the ``BodyBudget`` when its route first reads it
    (the route may refuse it before: a 401, a 415, a 413 from its Content-Length) and gives it back once the
    route has answered. Its declared length is taken; a chunked body takes the largest valid request's once
    it passes ``SMALL_BODY``. A wait past the budget's ``wait`` fails the read with ``BodyBudgetFull``, which
    the route answers (503, ``Retry-After``)."""

    def __init__(self, app: ASGIApp, budget: BodyBudget, largest: int) -> None:
        self.app, self.budget, self.largest = app, budget, largest

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = dict(scope["headers"])
        chunked = b"chunked" in headers.get(b"transfer-encoding", b"").lower()
        length = headers.get(b"content-length", b"")
        declared = int(length) if length.isdigit() and not chunked else None
        if not chunked and (declared is None or declared <= SMALL_BODY or declared > self.largest):
            await self.app(scope, receive, send)  # no body, a small one, or one refused unread (413)
            return
        share = _Share(self.budget, receive, declared, self.largest)
        try:
            await self.app(scope, share.receive, send)
        finally:
            if share.held:
                self.budget.release(share.held)


class _Share:
    """One request's share of the budget, taken as its body is first read."""

    def __init__(self, budget: BodyBudget, receive: Receive, declared: int | None, largest: int) -> None:
        self.budget, self._receive, self.declared, self.largest = budget, receive, declared, largest
        self.held = 0
        self._seen = 0

    async def receive(self) -> Message:
        if not self.held and self.declared is not None:
            await self._take(self.declared)
        message = await self._receive()
        if not self.held and message["type"] == "http.request":
            self._seen += len(message.get("body", b""))
            if self._seen > SMALL_BODY:
                await self._take(self.largest)
        return message

    async def _take(self, size: int) -> None:
        try:
            self.held = await self.budget.acquire(size)
        except TimeoutError:
            raise BodyBudgetFull(_busy(self.budget), file_action=True) from None


def _busy(budget: BodyBudget) -> str:
    return (
        f"the desktop is busy with other large requests ({budget.held} bytes of bodies, its budget is "
        f"{budget.capacity}: DESKTOP_BODY_BUDGET_BYTES); this one waited {budget.wait:g} s for its turn "
        f"(DESKTOP_BODY_WAIT): send it again in a few seconds"
    )


def install_gate(app: Starlette, settings: DesktopSettings) -> BodyBudget:
    """Hold the bodies of ``app``'s requests within a budget (``DESKTOP_BODY_BUDGET_BYTES``); to add inside
    the Guard (a refused request takes none of it). The budget is ``app.state.bodies`` too."""
    budget = app.state.bodies = BodyBudget(settings.body_budget_bytes, settings.body_wait)
    app.add_middleware(BodyGate, budget=budget, largest=max_request_bytes(settings.max_file_bytes))
    return budget
