"""The desktop's span of an action (deskpilot/desktop/spans.py): made in one step at its end, a child of the
caller's (``traceparent``), sampled as the SDK would, sent as OTLP with the exporter's client.

The services set a global provider once per process; here a provider of the test's own stands in as the one
``tracing.setup`` made, never installed globally, and what would be posted is kept and read back with the
OTLP protobuf messages.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue
from opentelemetry.proto.trace.v1.trace_pb2 import Span, Status
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.sampling import ALWAYS_OFF, Sampler

from deskpilot import tracing
from deskpilot.desktop import spans

TRACE_ID, CALLER_ID = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
TRACEPARENT = f"00-{TRACE_ID}-{CALLER_ID}-01".encode()


class Posted:
    """What the desktop would have posted to the OTLP endpoint, read back."""

    def __init__(self) -> None:
        self.requests: list[ExportTraceServiceRequest] = []

    def send(self, body: bytes) -> None:
        self.requests.append(ExportTraceServiceRequest.FromString(body))

    def get_finished_spans(self) -> tuple[Span, ...]:
        return tuple(
            span
            for request in self.requests
            for resource in request.resource_spans
            for scope in resource.scope_spans
            if scope.scope.name == spans.SCOPE
            and {a.key: a.value.string_value for a in resource.resource.attributes}["service.name"]
            == "desktop-test"
            for span in scope.spans
        )


@pytest.fixture
def exported(monkeypatch: pytest.MonkeyPatch) -> Iterator[Posted]:
    """Traces on, into memory (sampled as the SDK's default: ``use_sampler`` for another)."""
    yield from use_sampler(monkeypatch, None)


def use_sampler(monkeypatch: pytest.MonkeyPatch, sampler: Sampler | None) -> Iterator[Posted]:
    posted = Posted()
    provider = TracerProvider(sampler=sampler, resource=Resource.create({"service.name": "desktop-test"}))
    monkeypatch.setattr(tracing, "_provider", provider)
    monkeypatch.setattr(tracing, "_send", posted.send)
    monkeypatch.setattr(spans, "_recorder", [])
    yield posted
    provider.shutdown()


def plain(value: AnyValue) -> object:
    return getattr(value, value.WhichOneof("value") or "string_value")


def act(caller: bytes | None, fail: BaseException | None = None) -> tuple[str, str] | None:
    """One action's span as the controller makes it, the caller's ``traceparent`` given; the ids its log
    lines carry."""
    with spans.perform("type_text", "agent", "t-1", caller) as span:
        ids = tracing.log_ids.get()
        if fail is not None:
            span.failed(fail, "400")
        else:
            span.done(12.345, True)
    spans.drain()
    return ids


def test_off_an_action_gets_a_shared_object_that_does_nothing() -> None:
    assert not tracing.on()
    assert spans.perform("click_mouse", "api", None, TRACEPARENT) is spans.OFF
    assert spans.traceparent({"type": "http", "headers": [(b"traceparent", TRACEPARENT)]}) is None


def test_an_actions_span_is_the_child_of_the_callers(exported: Posted) -> None:
    ids = act(TRACEPARENT)
    (span,) = exported.get_finished_spans()
    assert span.name == "desktop.perform" and span.kind == Span.SPAN_KIND_SERVER
    assert span.trace_id.hex() == TRACE_ID
    assert span.parent_span_id.hex() == CALLER_ID and span.flags == 0x300  # its parent is remote
    assert ids == (TRACE_ID, span.span_id.hex())  # what its log lines carry
    assert {a.key: plain(a.value) for a in span.attributes} == {
        "deskpilot.action": "type_text",
        "deskpilot.actor": "agent",
        "deskpilot.task.id": "t-1",
        "deskpilot.outcome": "ok",
        "deskpilot.settle_ms": 12.3,
        "deskpilot.settled": True,
    }
    assert span.status.code == Status.STATUS_CODE_UNSET
    assert 0 < span.start_time_unix_nano <= span.end_time_unix_nano
    assert tracing.log_ids.get() is None  # after the action, no more


def test_a_failed_action_says_its_outcome_and_type_never_its_message(exported: Posted) -> None:
    act(TRACEPARENT, ValueError("typed-secret-1"))
    (span,) = exported.get_finished_spans()
    assert span.status.code == Status.STATUS_CODE_ERROR and not span.status.message
    attributes = {a.key: plain(a.value) for a in span.attributes}
    assert attributes["deskpilot.outcome"] == "400" and attributes["error.type"] == "ValueError"
    assert "typed-secret" not in str(span)


@pytest.mark.parametrize("caller", [None, b"00-" + b"0" * 32 + b"-00f067aa0ba902b7-01", b"not a traceparent"])
def test_without_a_valid_caller_an_action_starts_a_trace_of_its_own(
    exported: Posted, caller: bytes | None
) -> None:
    act(caller)
    (span,) = exported.get_finished_spans()
    assert not span.parent_span_id and span.flags == 0x100 and span.trace_id != bytes(16)


def test_a_caller_that_did_not_sample_is_followed(exported: Posted) -> None:
    ids = act(TRACEPARENT[:-2] + b"00")
    assert exported.get_finished_spans() == ()
    assert ids is not None and ids[0] == TRACE_ID  # the log lines still name the caller's trace


def test_a_root_span_follows_the_providers_sampler(monkeypatch: pytest.MonkeyPatch) -> None:
    for memory in use_sampler(monkeypatch, ALWAYS_OFF):
        act(None)
        assert memory.get_finished_spans() == ()


def test_the_caller_is_the_requests_traceparent_as_it_came(exported: Posted) -> None:
    headers = [(b"host", b"h"), (b"traceparent", TRACEPARENT), (b"content-length", b"2")]
    assert spans.traceparent({"type": "http", "headers": headers}) == TRACEPARENT
    assert spans.traceparent({"type": "http", "headers": headers[:1]}) is None


def test_span_ids_are_unique_and_valid(exported: Posted) -> None:
    made = {act(None)[1] for _ in range(3 * spans.SPAN_IDS)}  # type: ignore[index]
    assert len(made) == 3 * spans.SPAN_IDS
    assert all(len(i) == 16 and int(i, 16) for i in made)


def test_spans_go_out_in_batches_of_the_batch_processors_size(
    exported: Posted, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OTEL_BSP_MAX_EXPORT_BATCH_SIZE", "2")
    for _ in range(5):
        with spans.perform("click_mouse", "api", None, None) as span:
            span.done(None, None)
    spans.drain()
    assert [len(r.resource_spans[0].scope_spans[0].spans) for r in exported.requests] == [2, 2, 1]
    assert len({s.span_id for s in exported.get_finished_spans()}) == 5
