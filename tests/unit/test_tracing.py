"""Traces (deskpilot/tracing.py): when they are on, what a log line gets from a span, and what no span gets.

The SDK's global provider can be set once per process, so what needs one runs in a child interpreter; the
rest uses an SDK provider of the test's own, never installed globally. The spans across the services:
tests/integration/agent/test_tracing.py.
"""

from __future__ import annotations

import json
import logging
import subprocess
import sys
from pathlib import Path

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from deskpilot import tracing
from deskpilot.logs import Formatter, about_task, secret_values

ROOT = Path(__file__).resolve().parents[2]


def record(msg: str, **extra: object) -> logging.LogRecord:
    r = logging.LogRecord("deskpilot.test", logging.INFO, __file__, 1, msg, (), None)
    for k, v in extra.items():
        setattr(r, k, v)
    return r


@pytest.mark.parametrize(
    ("env", "wanted"),
    [
        ({}, False),
        ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"}, True),
        ({"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://collector:4318/v1/traces"}, True),
        ({"OTEL_EXPORTER_OTLP_ENDPOINT": " "}, False),
        ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_SDK_DISABLED": "true"}, False),
        ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_TRACES_EXPORTER": "none"}, False),
    ],
)
def test_traces_are_wanted_only_with_an_endpoint(env: dict[str, str], wanted: bool) -> None:
    assert tracing.wanted(env) is wanted


def test_off_nothing_is_added_to_requests_or_lines() -> None:
    assert not tracing.on()  # no service of this process set traces up
    assert tracing.inject({"a": "b"}) == {"a": "b"}
    assert tracing.current_ids() is None


def test_a_line_emitted_while_a_task_runs_names_it_unless_its_fields_do() -> None:
    f = Formatter(secrets=[])
    with about_task("t-1"):
        assert f.format(record("agent step")).endswith("agent step task=t-1")
        assert f.format(record("x", task="t-2")).endswith("x task=t-2")
    assert f.format(record("idle")).endswith("idle")


def test_a_line_emitted_in_a_span_carries_its_trace_and_span_ids(monkeypatch: pytest.MonkeyPatch) -> None:
    provider = TracerProvider()
    monkeypatch.setattr(tracing, "_provider", provider)  # as setup() leaves it, without the global one
    with provider.get_tracer("test").start_as_current_span("step") as span:
        ctx = span.get_span_context()
        body = json.loads(Formatter(json_lines=True, secrets=[]).format(record("agent step", task="t")))
        line = Formatter(secrets=[]).format(record("agent step", task="t"))
        own = Formatter(secrets=[]).format(record("agent step", trace_id="mine"))
        headers = tracing.inject({})
    assert body["trace_id"] == format(ctx.trace_id, "032x") and body["span_id"] == format(ctx.span_id, "016x")
    assert line.endswith(f"agent step task=t trace_id={ctx.trace_id:032x} span_id={ctx.span_id:016x}")
    assert own.endswith(f"agent step trace_id=mine span_id={ctx.span_id:016x}")  # a record's own field wins
    assert headers["traceparent"].startswith(f"00-{ctx.trace_id:032x}-{ctx.span_id:016x}-")
    assert "trace_id" not in Formatter(secrets=[]).format(record("outside"))


def test_a_credential_in_a_url_attribute_is_masked_before_export() -> None:
    exported = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(tracing._redaction())
    provider.add_span_processor(SimpleSpanProcessor(exported))
    query = {"url.query": "page=2&token=tok-secret-0123", "url.full": "http://h/ws?api_key=k-secret-4567"}
    with provider.get_tracer("test").start_as_current_span("GET /tasks", attributes=query):
        pass
    (span,) = exported.get_finished_spans()
    assert span.attributes == {"url.query": "page=2&token=***", "url.full": "http://h/ws?api_key=***"}


def test_the_exporters_headers_are_secrets_of_the_logs() -> None:
    env = {"OTEL_EXPORTER_OTLP_HEADERS": "Authorization=Bearer%20otlp-secret-1,x-tenant=acme"}
    secrets = secret_values(env)
    assert {"Bearer otlp-secret-1", "otlp-secret-1", env["OTEL_EXPORTER_OTLP_HEADERS"]} <= set(secrets)
    assert "acme" not in secrets  # shorter than 6: it would mask ordinary words


@pytest.mark.parametrize(
    ("value", "valid"),
    [
        (b"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", True),
        (b"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00", True),
        (b"00-00000000000000000000000000000000-00f067aa0ba902b7-01", False),
        (b"00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01", False),
        (b"00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01", False),
        (b"01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", False),
        (b"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra", False),
    ],
)
def test_only_a_valid_traceparent_names_a_caller(value: bytes, valid: bool) -> None:
    assert (tracing.TRACEPARENT.fullmatch(value) is not None) is valid


def test_probes_scrapes_static_files_and_websockets_get_no_server_span() -> None:
    assert tracing.untraced({"type": "http", "path": "/health"})
    assert tracing.untraced({"type": "http", "path": "/metrics"})
    assert tracing.untraced({"type": "http", "path": "/static/app.js"})
    assert tracing.untraced({"type": "websocket", "path": "/ws"})
    assert not tracing.untraced({"type": "http", "path": "/tasks"})


FAILURES = """
import asyncio, json
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from deskpilot import tracing
from deskpilot.agent.llm import LLMRejected
from deskpilot.computer.client import AsyncDesktop, DesktopClientError

exported = InMemorySpanExporter()
provider = TracerProvider()
provider.add_span_processor(SimpleSpanProcessor(exported))
trace.set_tracer_provider(provider)
tracing._provider = provider

async def main():
    async with AsyncDesktop("http://127.0.0.1:9") as desktop:  # nothing listens on the discard port
        try:
            await desktop.action("type_text", text="typed-secret-1")
        except DesktopClientError:
            pass
    try:
        with tracing.model_call("local/m"):
            raise LLMRejected("local/m: AuthenticationError: key sk-secret-2 is wrong")
    except LLMRejected:
        pass

asyncio.run(main())
print(json.dumps([[s.name, dict(s.attributes), s.status.status_code.name, s.status.description]
                  for s in exported.get_finished_spans()]))
"""


def test_a_failed_desktop_request_or_model_call_says_its_type_never_its_message() -> None:
    done = subprocess.run([sys.executable, "-c", FAILURES], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    action, call = json.loads(done.stdout)
    assert action == [
        "desktop.action",
        {"deskpilot.action": "type_text", "error.type": "DesktopClientError"},
        "ERROR",
        None,
    ]
    assert call[0] == "model.call" and call[2:] == ["ERROR", None]
    assert call[1]["error.type"] == "LLMRejected" and call[1]["deskpilot.outcome"] == "rejected"
    assert "secret" not in done.stdout
