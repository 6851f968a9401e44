"""The desktop's spans written as OTLP/protobuf by hand (deskpilot/desktop/otlp.py) are the message the SDK's
encoder makes of the same spans, field for field."""

from __future__ import annotations

from typing import Any

import pytest
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.util.instrumentation import InstrumentationScope
from opentelemetry.trace import SpanContext, SpanKind, Status, StatusCode, TraceFlags

from deskpilot.desktop import otlp

TRACE_ID, SPAN_ID, PARENT_ID = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7", "b7ad6b7169203331"
RESOURCE = {"service.name": "deskpilot-desktop", "service.version": "1.0", "telemetry.sdk.language": "python"}
SCOPE = "deskpilot.desktop.controller"
ATTRIBUTES: dict[str, Any] = {
    "deskpilot.action": "type_text",
    "deskpilot.actor": "agent",
    "deskpilot.task.id": "t-ü-1",
    "deskpilot.outcome": "ok",
    "deskpilot.settle_ms": 12.3,
    "deskpilot.settled": False,
    "deskpilot.count": -3,
    "deskpilot.keys": ("ctrl", "c"),
}


def sdk_span(
    parent_id: str | None, failed: bool, resource: Resource, scope: InstrumentationScope
) -> ReadableSpan:
    sampled = TraceFlags(TraceFlags.SAMPLED)
    tid = int(TRACE_ID, 16)
    return ReadableSpan(
        name="desktop.perform",
        context=SpanContext(tid, int(SPAN_ID, 16), False, sampled),
        parent=SpanContext(tid, int(parent_id, 16), True, sampled) if parent_id else None,
        resource=resource,
        attributes=ATTRIBUTES,
        kind=SpanKind.SERVER,
        status=Status(StatusCode.ERROR if failed else StatusCode.UNSET),
        start_time=1_764_000_000_123_456_789,
        end_time=1_764_000_000_124_456_789,
        instrumentation_scope=scope,
    )


@pytest.mark.parametrize("schema", ["", "https://opentelemetry.io/schemas/1.21.0"])
def test_a_batch_is_the_message_the_sdk_makes(schema: str) -> None:
    resource = Resource(RESOURCE, schema_url=schema)
    scope = InstrumentationScope(SCOPE)
    cases = [(PARENT_ID, False), (None, False), (PARENT_ID, True)]
    ours = otlp.Batch(RESOURCE, SCOPE, resource_schema=schema).request(
        otlp.span(
            "desktop.perform",
            TRACE_ID,
            SPAN_ID,
            parent,
            1_764_000_000_123_456_789,
            1_764_000_000_124_456_789,
            ATTRIBUTES,
            failed,
        )
        for parent, failed in cases
    )
    theirs = encode_spans([sdk_span(parent, failed, resource, scope) for parent, failed in cases])
    assert ExportTraceServiceRequest.FromString(ours) == theirs


def test_many_spans_go_in_requests_of_at_most_a_batch_each() -> None:
    batch = otlp.Batch(RESOURCE, SCOPE)
    spans = [otlp.span("s", TRACE_ID, f"{i + 1:016x}", None, 1, 2, {}, False) for i in range(5)]
    sent = [ExportTraceServiceRequest.FromString(r) for r in batch.requests(spans, 2)]
    assert [len(r.resource_spans[0].scope_spans[0].spans) for r in sent] == [2, 2, 1]
