"""The desktop's spans written as OTLP/protobuf straight from the recorder's tuples (spans.py).

The SDK's way to the wire makes a ``ReadableSpan`` of each, then its encoder makes protobuf message objects of
those and serialises them: ~200,000 instructions a span (``bench/tracing.py --instructions``), in a thread
that holds the interpreter while the event loop's requests wait for it. Written here, a span is a few bytes
strings joined: the same ``ExportTraceServiceRequest`` (opentelemetry/proto/collector/trace/v1), field for
field, as tests/unit/desktop/test_otlp.py checks against the SDK's encoder. The resource and the scope are
written once.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

# Span.kind SPAN_KIND_SERVER; Span.flags: SPAN_FLAGS_CONTEXT_HAS_IS_REMOTE_MASK, and IS_REMOTE for a parent
# from another process (the caller's traceparent)
KIND_SERVER = b"\x30\x02"
FLAGS_ROOT = b"\x85\x01" + struct.pack("<I", 0x100)
FLAGS_REMOTE_PARENT = b"\x85\x01" + struct.pack("<I", 0x300)
STATUS = {False: b"\x7a\x00", True: b"\x7a\x02\x18\x02"}  # Status{} (unset), Status{code: ERROR}


_BYTES = [bytes((i,)) for i in range(0x80)]
_TIMES = struct.Struct("<BQBQ")  # start_time_unix_nano (7) and end_time_unix_nano (8), fixed64 each
_KEPT = 4096  # KeyValues of strings and bools written once and kept (an action, its actor, outcome, task)


def varint(n: int) -> bytes:
    if n < 0x80:
        return _BYTES[n]
    out = bytearray()
    while n > 0x7F:
        out.append(n & 0x7F | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def field(number: int, payload: bytes) -> bytes:
    """A length-delimited field: a string, bytes or an embedded message."""
    return varint(number << 3 | 2) + varint(len(payload)) + payload


def value(v: Any) -> bytes:
    """An ``AnyValue``: a string, a bool, an int, a float, or a sequence of them."""
    if isinstance(v, bool):
        return b"\x10\x01" if v else b"\x10\x00"
    if isinstance(v, int):
        return b"\x18" + varint(v & 0xFFFF_FFFF_FFFF_FFFF)
    if isinstance(v, float):
        return b"\x21" + struct.pack("<d", v)
    if isinstance(v, (list, tuple)):
        return field(5, b"".join(field(1, value(item)) for item in v))
    return field(1, str(v).encode())


_pairs: dict[tuple[int, str, str | bool], bytes] = {}


def pair(number: int, k: str, v: Any) -> bytes:
    """One ``KeyValue`` as field ``number`` of its message."""
    if not isinstance(v, (str, bool)):
        return field(number, field(1, k.encode()) + field(2, value(v)))
    kept = _pairs.get((number, k, v))
    if kept is None:
        if len(_pairs) >= _KEPT:
            _pairs.clear()
        kept = _pairs[number, k, v] = field(number, field(1, k.encode()) + field(2, value(v)))
    return kept


def attributes(number: int, pairs: Mapping[str, Any]) -> bytes:
    """Repeated ``KeyValue`` as field ``number`` of their message."""
    return b"".join([pair(number, k, v) for k, v in pairs.items()])


def span(
    name: str,
    trace_id: str,
    span_id: str,
    parent_id: str | None,
    start: int,
    end: int,
    attrs: Mapping[str, Any],
    failed: bool,
) -> bytes:
    """One ``Span`` (a server span; ids in hex, times in ns since the epoch), as field 2 of its
    ``ScopeSpans``."""
    body = b"".join(
        (
            b"\x0a\x10",
            bytes.fromhex(trace_id),
            b"\x12\x08",
            bytes.fromhex(span_id),
            b"\x22\x08" + bytes.fromhex(parent_id) if parent_id else b"",
            field(5, name.encode()),
            KIND_SERVER,
            _TIMES.pack(0x39, start, 0x41, end),
            attributes(9, attrs),
            STATUS[failed],
            FLAGS_REMOTE_PARENT if parent_id else FLAGS_ROOT,
        )
    )
    return field(2, body)


class Batch:
    """``ExportTraceServiceRequest`` bodies of one resource and one instrumentation scope."""

    def __init__(self, resource: Mapping[str, Any], scope: str, resource_schema: str = "") -> None:
        self.head = field(1, attributes(1, resource))  # ResourceSpans.resource
        self.scope = field(1, field(1, scope.encode()))  # ScopeSpans.scope, its name alone
        self.tail = field(3, resource_schema.encode()) if resource_schema else b""

    def request(self, spans: Iterable[bytes]) -> bytes:
        return field(1, self.head + field(2, self.scope + b"".join(spans)) + self.tail)

    def requests(self, spans: Sequence[bytes], size: int) -> list[bytes]:
        """``spans`` in requests of at most ``size`` spans each."""
        return [self.request(spans[i : i + size]) for i in range(0, len(spans), max(1, size))]
