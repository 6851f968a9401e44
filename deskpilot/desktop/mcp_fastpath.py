"""Hot-path speed-ups for the MCP SDK's transports, where a screenshot is one 1.3 MB JSON-RPC message.

None of them changes what goes on the wire (unit-tested). Each one leans on a private detail of a library,
so ``install()`` puts them in place only on the release series they were written and tested for; on any
other version the endpoint runs as the libraries ship it, correct and only slower. Measured with
``bench/mcp_screenshot.py``.
"""

from __future__ import annotations

import functools
import json
import logging
import re
from collections.abc import Callable
from importlib import metadata
from types import ModuleType, TracebackType
from typing import Any, Protocol, Self, cast

import orjson
from mcp.shared.message import SessionMessage
from mcp.types import JSONRPCMessage
from sse_starlette.event import ServerSentEvent

log = logging.getLogger(__name__)

# The release series (major, minor) each speed-up was written and tested for, by the library it relies on.
TESTED = {"mcp": (2, 3), "sse-starlette": (3, 7)}

# sse-starlette: ServerSentEvent's line-splitting regex (SSE and handshake-era streamable-HTTP streams)
SSE_LINE_BREAKS = "sse-line-breaks"
SSE_WRITES = "sse-writes"  # mcp: the SSE writer uses a message only as ``Outgoing`` provides (FastWrites)
STREAMABLE_DUMPS = "streamable-dumps"  # mcp: the 2026-07-28 streamable-HTTP handler's ``json.dumps``
RELIES_ON = {SSE_LINE_BREAKS: "sse-starlette", SSE_WRITES: "mcp", STREAMABLE_DUMPS: "mcp"}


def install(version: Callable[[str], str] = metadata.version) -> frozenset[str]:
    """Put in place the speed-ups whose library is a tested version, and return their names.

    Idempotent. Logs once per process which were installed (INFO) and which were skipped (WARNING).
    ``version`` reads a distribution's version (``importlib.metadata.version``; tests pass their own).
    """
    active = _choose(tuple((dist, _version_of(dist, version)) for dist in TESTED))
    if SSE_LINE_BREAKS in active:
        _install_line_breaks()
    if STREAMABLE_DUMPS in active:
        _install_streamable_dumps()
    return active


def _version_of(dist: str, version: Callable[[str], str]) -> str:
    try:
        return version(dist)
    except metadata.PackageNotFoundError:
        return "unknown"


def _tested(dist: str, version: str) -> bool:
    series = re.match(r"(\d+)\.(\d+)", version)
    return series is not None and (int(series[1]), int(series[2])) == TESTED[dist]


@functools.cache
def _choose(versions: tuple[tuple[str, str], ...]) -> frozenset[str]:
    """The speed-ups for these library versions; cached, so each outcome is logged once."""
    ok = {dist for dist, v in versions if _tested(dist, v)}
    active = frozenset(name for name, dist in RELIES_ON.items() if dist in ok)
    found = ", ".join(f"{dist} {v}" for dist, v in versions)
    if active:
        log.info("MCP speed-ups installed", extra={"speedups": ",".join(sorted(active)), "versions": found})
    if skipped := sorted(set(RELIES_ON) - active):
        tested = ", ".join(f"{dist} {a}.{b}.x" for dist, (a, b) in TESTED.items())
        log.warning(
            "MCP speed-ups skipped on untested library versions (replies are the same, only slower)",
            extra={"speedups": ",".join(skipped), "versions": found, "tested": tested},
        )
    return active


# ---------------------------------------------------------------------------------------------- SSE streams


class _LineBreaks:
    """sse-starlette, which writes the event streams of both the SSE transport and handshake-era
    streamable HTTP, splits every event's data on line breaks with a regex: ~9 ms for one screenshot.
    A JSON-RPC message is a single line, so look for a line break with ``str.__contains__`` first
    (~0.1 ms); the result is the same either way."""

    def __init__(self, regex: re.Pattern[str]) -> None:
        self._regex = regex

    def split(self, text: str) -> list[str]:
        return self._regex.split(text) if "\n" in text or "\r" in text else [text]

    def sub(self, repl: str, text: str) -> str:
        return self._regex.sub(repl, text)


def _install_line_breaks() -> None:
    regex = ServerSentEvent._LINE_SEP_EXPR
    if isinstance(regex, re.Pattern):  # otherwise already installed (or changed: leave it)
        ServerSentEvent._LINE_SEP_EXPR = _LineBreaks(regex)  # type: ignore[assignment]


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


class _Sink(Protocol):
    async def send(self, item: SessionMessage, /) -> None: ...
    async def aclose(self) -> None: ...


class FastWrites:
    """A server write stream that hands each message on as ``Outgoing`` (only where ``SSE_WRITES`` is
    installed: it relies on how the SDK's SSE writer uses a message)."""

    def __init__(self, inner: _Sink) -> None:
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


# ------------------------------------------------------------------------------------------ streamable HTTP


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
    if getattr(handler, "json", None) is json:  # otherwise already installed (or changed: leave it)
        # The handler's own `json` (loads, JSONDecodeError, ...) with only `dumps` replaced.
        fast = ModuleType("json")
        fast.__dict__.update(json.__dict__, dumps=_fast_dumps)
        handler.json = fast  # type: ignore[attr-defined]
