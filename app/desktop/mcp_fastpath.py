"""Hot-path fixes for the MCP SDK's transports, where a screenshot is one 1.3 MB JSON-RPC message.

Each fix keeps what goes on the wire the same (unit-tested); if the SDK changes underneath, the worst
case is losing the speed-up, not behaving differently. Measured with ``bench/mcp_screenshot.py``.
"""

from __future__ import annotations

import json
from types import ModuleType, TracebackType
from typing import Any, Self, cast

import orjson
from mcp.shared._stream_protocols import WriteStream
from mcp.shared.message import SessionMessage
from mcp.types import JSONRPCMessage
from sse_starlette.event import ServerSentEvent


class _LineBreaks:
    """sse-starlette splits every event's data on line breaks with a regex: ~9 ms for one screenshot.
    A JSON-RPC message is a single line, so look for a line break with ``str.__contains__`` first
    (~0.1 ms); the result is the same either way."""

    _regex = ServerSentEvent._LINE_SEP_EXPR

    def split(self, text: str) -> list[str]:
        return self._regex.split(text) if "\n" in text or "\r" in text else [text]

    def sub(self, repl: str, text: str) -> str:
        return self._regex.sub(repl, text)


if not isinstance(ServerSentEvent._LINE_SEP_EXPR, _LineBreaks):
    ServerSentEvent._LINE_SEP_EXPR = _LineBreaks()  # type: ignore[assignment]


class Outgoing:
    """An outgoing message as the SDK's SSE writer uses it, which is only two ways:

    - ``model_dump_json``: orjson over ``model_dump`` is byte-identical to pydantic's serialiser and
      0.2 ms instead of 0.9 ms for a screenshot (pydantic's is kept for what orjson refuses, such as
      integers beyond 64 bits);
    - ``repr``: the writer formats every message into a debug f-string whether or not debug logging is
      on, which costs ~2 ms over a screenshot's base64; this repr is a one-line summary.
    """

    __slots__ = ("message",)

    def __init__(self, message: JSONRPCMessage) -> None:
        self.message = message

    def model_dump_json(self, **options: Any) -> str:
        try:
            return orjson.dumps(self.message.model_dump(mode="json", **options)).decode()
        except orjson.JSONEncodeError:
            return self.message.model_dump_json(**options)

    def __repr__(self) -> str:
        return f"{type(self.message).__name__}(id={getattr(self.message, 'id', None)!r}, ...)"


class FastWrites:
    """A server write stream that hands each message on as ``Outgoing``."""

    def __init__(self, inner: WriteStream[SessionMessage]) -> None:
        self._inner = inner

    async def send(self, item: SessionMessage, /) -> None:
        # SessionMessage is typed for a JSONRPCMessage; Outgoing stands in for the two uses above.
        await self._inner.send(SessionMessage(cast(JSONRPCMessage, Outgoing(item.message)), item.metadata))

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()


def _fast_dumps(obj: Any, **options: Any) -> str:
    """``json.dumps`` for the SDK's streamable-HTTP handler, which serialises every reply with it: 3.7 ms
    for a screenshot, a quarter of the whole call; orjson takes 0.2 ms. The output is the same JSON
    value; it is spelt differently only where the stdlib's is longer or not strict JSON (orjson writes
    UTF-8 rather than ``\\u`` escapes, and ``null`` for NaN). What orjson refuses (integers beyond
    64 bits) goes to the stdlib as before."""
    try:
        return orjson.dumps(obj).decode()
    except orjson.JSONEncodeError:
        return json.dumps(obj, **options)


def _install_streamable_dumps() -> None:
    try:
        from mcp.server import _streamable_http_modern as handler
    except ImportError:  # the SDK moved it: keep its own (slower) serialiser
        return
    if getattr(handler, "json", None) is json:
        # The handler's own `json` (loads, JSONDecodeError, ...) with only `dumps` replaced.
        fast = ModuleType("json")
        fast.__dict__.update(json.__dict__, dumps=_fast_dumps)
        handler.json = fast  # type: ignore[attr-defined]


_install_streamable_dumps()
