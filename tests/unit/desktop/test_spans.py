"""The desktop's span of an action (deskpilot/desktop/spans.py): made in one step at its end, a child of the
caller's (``traceparent``), sampled as the SDK would, exported as the SDK's own spans are.

The services set a global provider once per process; here a provider of the test's own (an in-memory
exporter) stands in as the one ``tracing.setup`` made, never installed globally.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.sdk.trace.sampling import ALWAYS_OFF, Sampler
from opentelemetry.trace import SpanKind, StatusCode

from deskpilot import tracing
from deskpilot.desktop import spans

TRACE_ID, CALLER_ID = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
TRACEPARENT = f"00-{TRACE_ID}-{CALLER_ID}-01".encode()


@pytest.fixture
def exported(monkeypatch: pytest.MonkeyPatch) -> Iterator[InMemorySpanExporter]:
    """Traces on, into memory (sampled as the SDK's default: ``use_sampler`` for another)."""
    yield from use_sampler(monkeypatch, None)


def use_sampler(monkeypatch: pytest.MonkeyPatch, sampler: Sampler | None) -> Iterator[InMemorySpanExporter]:
    memory = InMemorySpanExporter()
    provider = TracerProvider(sampler=sampler)
    processor = SimpleSpanProcessor(memory)
    monkeypatch.setattr(tracing, "_provider", provider)
    monkeypatch.setattr(tracing, "_processor", processor)
    monkeypatch.setattr(spans, "_recorder", [])
    yield memory
    provider.shutdown()


def act(caller: bytes | None, fail: BaseException | None = None) -> tuple[str, str] | None:
    """One action's span as the controller makes it, the caller's ``traceparent`` given; the ids its log
    lines carry."""
    token = spans._caller.set(caller)
    try:
        with spans.perform("type_text", "agent", "t-1") as span:
            ids = tracing.log_ids.get()
            if fail is not None:
                span.failed(fail, "400")
            else:
                span.done(12.345, True)
    finally:
        spans._caller.reset(token)
    spans.drain()
    return ids


def test_off_an_action_gets_a_shared_object_that_does_nothing() -> None:
    assert not tracing.on()
    assert spans.perform("click_mouse", "api", None) is spans.OFF


def test_an_actions_span_is_the_child_of_the_callers(exported: InMemorySpanExporter) -> None:
    ids = act(TRACEPARENT)
    (span,) = exported.get_finished_spans()
    assert isinstance(span, ReadableSpan) and span.name == "desktop.perform" and span.kind == SpanKind.SERVER
    assert format(span.context.trace_id, "032x") == TRACE_ID
    assert (
        span.parent is not None and format(span.parent.span_id, "016x") == CALLER_ID and span.parent.is_remote
    )
    assert ids == (TRACE_ID, format(span.context.span_id, "016x"))  # what its log lines carry
    assert dict(span.attributes or {}) == {
        "deskpilot.action": "type_text",
        "deskpilot.actor": "agent",
        "deskpilot.task.id": "t-1",
        "deskpilot.outcome": "ok",
        "deskpilot.settle_ms": 12.3,
        "deskpilot.settled": True,
    }
    assert span.status.status_code == StatusCode.UNSET
    assert span.start_time is not None and span.end_time is not None and span.start_time <= span.end_time
    assert tracing.log_ids.get() is None  # after the action, no more


def test_a_failed_action_says_its_outcome_and_type_never_its_message(exported: InMemorySpanExporter) -> None:
    act(TRACEPARENT, ValueError("typed-secret-1"))
    (span,) = exported.get_finished_spans()
    assert span.status.status_code == StatusCode.ERROR and not span.status.description
    assert span.attributes is not None and span.attributes["deskpilot.outcome"] == "400"
    assert span.attributes["error.type"] == "ValueError"
    assert "typed-secret" not in str(dict(span.attributes))


@pytest.mark.parametrize("caller", [None, b"00-" + b"0" * 32 + b"-00f067aa0ba902b7-01", b"not a traceparent"])
def test_without_a_valid_caller_an_action_starts_a_trace_of_its_own(
    exported: InMemorySpanExporter, caller: bytes | None
) -> None:
    act(caller)
    (span,) = exported.get_finished_spans()
    assert span.parent is None and span.context.trace_id != 0


def test_a_caller_that_did_not_sample_is_followed(exported: InMemorySpanExporter) -> None:
    ids = act(TRACEPARENT[:-2] + b"00")
    assert exported.get_finished_spans() == ()
    assert ids is not None and ids[0] == TRACE_ID  # the log lines still name the caller's trace


def test_a_root_span_follows_the_providers_sampler(monkeypatch: pytest.MonkeyPatch) -> None:
    for memory in use_sampler(monkeypatch, ALWAYS_OFF):
        act(None)
        assert memory.get_finished_spans() == ()


def test_the_callers_traceparent_is_kept_for_its_request_alone() -> None:
    seen: list[bytes | None] = []

    async def app(scope: object, receive: object, send: object) -> None:
        seen.append(spans._caller.get())

    middleware = spans.CallerContext(app)

    async def requests() -> None:
        for headers in ([(b"host", b"h"), (b"traceparent", TRACEPARENT)], [(b"host", b"h")]):
            await middleware({"type": "http", "headers": headers}, None, None)  # type: ignore[arg-type]

    asyncio.run(requests())
    assert seen == [TRACEPARENT, None]
