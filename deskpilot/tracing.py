"""OpenTelemetry traces: on when ``OTEL_EXPORTER_OTLP_ENDPOINT`` is set, off and free when it is not.

Each service sets it up when its app is created (``telemetry("deskpilot-tasks")``, which also configures
FastAPI's own server spans). Off (no endpoint), nothing is set up: no SDK is imported, no exporter runs, and
the spans of the instrumented code go to the API's no-op tracer. On, one ``TracerProvider`` per process
exports through a ``BatchSpanProcessor`` and OTLP over HTTP (protobuf) to
``$OTEL_EXPORTER_OTLP_ENDPOINT/v1/traces``; the standard ``OTEL_*`` variables (``OTEL_SERVICE_NAME``,
``OTEL_RESOURCE_ATTRIBUTES``, ``OTEL_EXPORTER_OTLP_HEADERS``, ``OTEL_TRACES_SAMPLER``, ``OTEL_BSP_*`` ...)
apply. A service flushes what is left with ``flush()`` when its lifespan ends.

This module imports nothing of OpenTelemetry at import time: the desktop client (``deskpilot.computer``),
which installs without the services' dependencies, asks it whether traces are on and, when they are, sends
the trace context (W3C ``traceparent``) with each desktop request. Span attributes are names, numbers and
outcomes: never a typed text, a file, a header or a secret (docs/operations.md, "Traces").
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterator, Mapping, MutableMapping
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any

from deskpilot import __version__

if TYPE_CHECKING:
    from fastapi.telemetry import TelemetryConfig
    from opentelemetry.context import Context
    from opentelemetry.sdk.trace import ReadableSpan, Span
    from opentelemetry.trace import Span as ApiSpan
    from opentelemetry.trace import TracerProvider

ENDPOINT_VARIABLES = ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT")
# Requests FastAPI makes no server span of: probes, scrapes, the UI's static files, and WebSockets (which
# last hours).
UNTRACED_PATHS = frozenset({"/health", "/health/live", "/metrics"})
# Span attributes that hold a URL's query, whose credentials (``?token=``) are masked as in the logs.
URL_ATTRIBUTES = ("url.query", "url.full")
FLUSH_TIMEOUT_MS = 5000
# W3C trace context, version 00: trace id, parent id, flags (https://www.w3.org/TR/trace-context/)
TRACEPARENT = re.compile(rb"00-(?!0{32})([0-9a-f]{32})-(?!0{16})([0-9a-f]{16})-([0-9a-f]{2})")

_provider: TracerProvider | None = None
# posts an encoded ExportTraceServiceRequest with the exporter setup() made (its endpoint, headers,
# compression, retries): the way out of spans written in one step (deskpilot/desktop/spans.py)
_send: Callable[[bytes], object] | None = None
# (trace id, span id) in hex of a span kept outside OpenTelemetry's context (deskpilot/desktop/spans.py)
log_ids: ContextVar[tuple[str, str] | None] = ContextVar("deskpilot_log_ids", default=None)


def wanted(environ: Mapping[str, str] | None = None) -> bool:
    """Traces are asked for: an OTLP endpoint is set, and neither the SDK nor the traces exporter is off."""
    env = os.environ if environ is None else environ
    if env.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return False
    if env.get("OTEL_TRACES_EXPORTER", "otlp").strip().lower() == "none":
        return False
    return any(env.get(name, "").strip() for name in ENDPOINT_VARIABLES)


def on() -> bool:
    """Spans are exported from this process (``setup`` found an endpoint)."""
    return _provider is not None


def setup(service: str) -> bool:
    """The process's tracer provider, once, when traces are wanted; ``service`` is the name it reports
    unless ``OTEL_SERVICE_NAME`` says another. A provider set up before (``opentelemetry-instrument``) is
    used as it is. Returns whether traces are on."""
    global _provider, _send
    if _provider is not None or not wanted():
        return _provider is not None
    from opentelemetry import trace
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    current = trace.get_tracer_provider()
    if isinstance(current, trace.NoOpTracerProvider):
        return False
    if not isinstance(current, trace.ProxyTracerProvider):
        _provider = current
        return True
    name = os.environ.get("OTEL_SERVICE_NAME", "").strip() or service
    resource = Resource.create({"service.name": name, "service.version": __version__})
    provider = TracerProvider(resource=resource)
    exporter = OTLPSpanExporter()
    provider.add_span_processor(_redaction())
    provider.add_span_processor(BatchSpanProcessor(exporter))
    trace.set_tracer_provider(provider)
    _provider = trace.get_tracer_provider()
    # the exporter's HTTP client (private in the SDK, pinned by constraints.txt): without it, the desktop's
    # spans are the SDK's own
    export = getattr(getattr(exporter, "_client", None), "export", None)
    _send = export if _provider is provider and callable(export) else None
    return True


def pipeline() -> tuple[TracerProvider, Callable[[bytes], object]] | None:
    """The provider ``setup`` made and a function that posts an encoded ``ExportTraceServiceRequest`` with its
    exporter, for spans written in one step (deskpilot/desktop/spans.py); None when traces are off or the
    provider is someone else's."""
    return (_provider, _send) if _provider is not None and _send is not None else None


async def flush(timeout_ms: int = FLUSH_TIMEOUT_MS) -> None:
    """Export the spans still queued (a service's lifespan ends with it), waiting at most ``timeout_ms`` for
    a receiver that does not answer; off, nothing."""
    force_flush = getattr(_provider, "force_flush", None)
    if callable(force_flush):
        import asyncio

        await asyncio.to_thread(force_flush, timeout_ms)


def _redaction() -> Any:
    """A span processor that masks the credentials of URL attributes (FastAPI's ``url.query``) the moment a
    span starts, before any exporter can see them."""
    from opentelemetry.sdk.trace import SpanProcessor

    from deskpilot.logs import redact_query

    class Redaction(SpanProcessor):
        def on_start(self, span: Span, parent_context: Context | None = None) -> None:
            attributes = span.attributes or {}
            for key in URL_ATTRIBUTES:
                value = attributes.get(key)
                if isinstance(value, str) and "=" in value:
                    span.set_attribute(key, redact_query(value))

        def on_end(self, span: ReadableSpan) -> None:
            return None

    return Redaction()


# --------------------------------------------------------------------------------------- the web services


def telemetry(service: str, server_spans: bool = True) -> TelemetryConfig:
    """Traces set up for ``service`` (``setup``), and its ``FastAPI(telemetry=...)``: FastAPI's own span per
    HTTP request (``GET /tasks/{task_id}``: method, route, status) or none, never its spans of dependencies
    and serialisation, nor exporters of its own (``setup`` made the one there is)."""
    setup(service)
    if not server_spans:
        return {"tracing": False, "auto_configure": False}
    return {"operation_spans": False, "auto_configure": False, "exclude": untraced}


def untraced(scope: MutableMapping[str, Any]) -> bool:
    path = scope.get("path", "")
    return scope["type"] != "http" or path in UNTRACED_PATHS or path.startswith("/static/")


def extract(carrier: Mapping[str, str]) -> Context:
    """The trace context of a request's headers (``traceparent``, ``tracestate``)."""
    from opentelemetry import propagate

    return propagate.extract(carrier)


def inject(headers: Mapping[str, str]) -> dict[str, str]:
    """``headers`` and the current trace context (``traceparent``, ``tracestate``) when traces are on."""
    out = dict(headers)
    if _provider is not None:
        from opentelemetry import propagate

        propagate.inject(out)
    return out


# ------------------------------------------------------------------------------------------------- logs


def current_ids() -> tuple[str, str] | None:
    """(trace id, span id) in hex of the span a log record is emitted in; None outside one or when off."""
    if _provider is None:
        return None
    if (ids := log_ids.get()) is not None:
        return ids
    from opentelemetry import trace

    ctx = trace.get_current_span().get_span_context()
    if not ctx.is_valid:
        return None
    return format(ctx.trace_id, "032x"), format(ctx.span_id, "016x")


# ----------------------------------------------------------------------------------- the desktop client


class DesktopCall:
    """The ``desktop.action`` span of one request of the desktop client."""

    def __init__(self, span: ApiSpan) -> None:
        self.span = span

    def headers(self, headers: Mapping[str, str]) -> dict[str, str]:
        """The request's headers with this span as the desktop's parent."""
        return inject(headers)

    def answered(self, status: int) -> None:
        self.span.set_attribute("http.response.status_code", status)

    def settled(self, body: Mapping[str, Any]) -> None:
        """How long the action's settle waited, when it asked for one."""
        if body.get("settledMs") is not None:
            self.span.set_attribute("deskpilot.settle_ms", float(body["settledMs"]))
            self.span.set_attribute("deskpilot.settled", bool(body.get("settled")))


@contextmanager
def desktop_action(action: str) -> Iterator[DesktopCall]:
    """A client span around one desktop request (``action``: its name, or ``reset``, ``command``); an
    exception (an error answer, none) marks it failed with its type, never its message."""
    from opentelemetry import trace

    tracer = trace.get_tracer("deskpilot.computer.client")
    with tracer.start_as_current_span(
        "desktop.action",
        kind=trace.SpanKind.CLIENT,
        attributes={"deskpilot.action": action},
        record_exception=False,
        set_status_on_exception=False,
    ) as span:
        try:
            yield DesktopCall(span)
        except BaseException as exc:
            failed(span, exc)
            raise


# ------------------------------------------------------------------------------------------- the agent


class ModelCall:
    """The ``model.call`` span of one completion (its retries included)."""

    def __init__(self, span: ApiSpan) -> None:
        self.span = span

    def replied(self, input_tokens: int, output_tokens: int) -> None:
        self.span.set_attributes(
            {
                "gen_ai.usage.input_tokens": input_tokens,
                "gen_ai.usage.output_tokens": output_tokens,
                "deskpilot.outcome": "ok",
            }
        )


@contextmanager
def model_call(model: str) -> Iterator[ModelCall]:
    """A client span around one call of ``model`` (our name, ``anthropic/claude-sonnet-4-6``) with its
    latency; an exception marks it failed with its ``outcome`` attribute (``rejected``, ``unavailable``)."""
    import time

    from opentelemetry import trace

    tracer = trace.get_tracer("deskpilot.agent.llm")
    attributes = {"gen_ai.operation.name": "chat", "gen_ai.request.model": model}
    started = time.monotonic()
    with tracer.start_as_current_span(
        "model.call",
        kind=trace.SpanKind.CLIENT,
        attributes=attributes,
        record_exception=False,
        set_status_on_exception=False,
    ) as span:
        try:
            yield ModelCall(span)
        except BaseException as exc:
            failed(span, exc, str(getattr(exc, "outcome", "error")))
            raise
        finally:
            span.set_attribute("deskpilot.latency_ms", round((time.monotonic() - started) * 1000, 1))


def failed(span: ApiSpan, exc: BaseException, outcome: str | None = None) -> None:
    """Mark ``span`` failed by ``exc``: its type, never its message (which may quote what was typed)."""
    from opentelemetry.trace import Status, StatusCode

    span.set_attribute("error.type", type(exc).__name__)
    if outcome is not None:
        span.set_attribute("deskpilot.outcome", outcome)
    span.set_status(Status(StatusCode.ERROR))
