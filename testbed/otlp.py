"""An OTLP/HTTP trace receiver on loopback: what a collector sees of the services' spans.

``POST /v1/traces`` with an ``ExportTraceServiceRequest`` in protobuf (gzip or not), decoded with
``opentelemetry-proto`` (a dependency of the exporter); every other request is a 404. The spans are kept,
flattened, with their service's name, for the tests (tests/integration/agent/test_tracing.py);
``GET /stats`` counts them. ``python -m testbed.otlp PORT`` serves one in a process of its own
(bench/tracing.py: parsing what the services export does not take the measuring process's time).
"""

from __future__ import annotations

import gzip
import json
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue

from testbed.net import free_port


@dataclass(frozen=True)
class ReceivedSpan:
    service: str
    name: str
    trace_id: str  # hex, as the logs print it
    span_id: str
    parent_id: str  # "" for a root span
    kind: int  # opentelemetry.proto.trace.v1.Span.SpanKind
    attributes: dict[str, Any]
    status: int  # 0 unset, 1 ok, 2 error


def value(v: AnyValue) -> Any:
    kind = v.WhichOneof("value")
    if kind == "array_value":
        return [value(x) for x in v.array_value.values]
    if kind == "kvlist_value":
        return {kv.key: value(kv.value) for kv in v.kvlist_value.values}
    return getattr(v, kind) if kind else None


def spans_of(request: ExportTraceServiceRequest) -> list[ReceivedSpan]:
    out = []
    for resource_spans in request.resource_spans:
        resource = {a.key: value(a.value) for a in resource_spans.resource.attributes}
        for scope_spans in resource_spans.scope_spans:
            for s in scope_spans.spans:
                out.append(
                    ReceivedSpan(
                        service=str(resource.get("service.name", "")),
                        name=s.name,
                        trace_id=s.trace_id.hex(),
                        span_id=s.span_id.hex(),
                        parent_id=s.parent_span_id.hex(),
                        kind=s.kind,
                        attributes={a.key: value(a.value) for a in s.attributes},
                        status=s.status.code,
                    )
                )
    return out


@dataclass
class Receiver:
    url: str  # what OTEL_EXPORTER_OTLP_ENDPOINT is set to
    spans: list[ReceivedSpan] = field(default_factory=list)
    requests: int = 0  # every request, whatever its path
    bodies: list[bytes] = field(default_factory=list)  # the raw protobuf bodies, decompressed
    lock: threading.Lock = field(default_factory=threading.Lock)

    def received(self, body: bytes) -> None:
        request = ExportTraceServiceRequest()
        request.ParseFromString(body)
        with self.lock:
            self.bodies.append(body)
            self.spans.extend(spans_of(request))

    def wait_for(self, done: Callable[[list[ReceivedSpan]], bool], timeout: float = 20) -> list[ReceivedSpan]:
        """The spans so far, once ``done(spans)`` holds; TimeoutError with what came otherwise."""
        deadline = time.monotonic() + timeout
        while True:
            with self.lock:
                spans = list(self.spans)
            if done(spans):
                return spans
            if time.monotonic() > deadline:
                names = sorted({(s.service, s.name) for s in spans})
                raise TimeoutError(f"{len(spans)} spans after {timeout} s: {names}")
            time.sleep(0.05)


def _handler(receiver: Receiver) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            with receiver.lock:
                receiver.requests += 1
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            if self.path != "/v1/traces":
                self.send_error(404)
                return
            if self.headers.get("Content-Encoding") == "gzip":
                body = gzip.decompress(body)
            receiver.received(body)
            answer = ExportTraceServiceResponse().SerializeToString()
            self.send_response(200)
            self.send_header("Content-Type", "application/x-protobuf")
            self.send_header("Content-Length", str(len(answer)))
            self.end_headers()
            self.wfile.write(answer)

        def do_GET(self) -> None:
            if self.path != "/stats":
                self.send_error(404)
                return
            with receiver.lock:
                stats = {"requests": receiver.requests, "spans": len(receiver.spans)}
            body = json.dumps(stats).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            return None

    return Handler


@contextmanager
def otlp_receiver(port: int | None = None) -> Iterator[Receiver]:
    port = port or free_port()
    receiver = Receiver(f"http://127.0.0.1:{port}")
    server = ThreadingHTTPServer(("127.0.0.1", port), _handler(receiver))
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield receiver
    finally:
        server.shutdown()
        server.server_close()


if __name__ == "__main__":
    with otlp_receiver(int(sys.argv[1])):
        threading.Event().wait()
