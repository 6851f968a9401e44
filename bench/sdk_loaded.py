"""A service's app made in a process that has imported OpenTelemetry's SDK and its OTLP exporter, with traces
off (``bench/tracing.py --sdk-loaded``): what carrying them costs a process, apart from tracing anything.
``BENCH_FACTORY`` names the app's factory (module:function)."""

from __future__ import annotations

import importlib
import os
from typing import Any

import opentelemetry.exporter.otlp.proto.http.trace_exporter
import opentelemetry.sdk.trace
import opentelemetry.sdk.trace.export  # noqa: F401


def app() -> Any:
    module, name = os.environ["BENCH_FACTORY"].split(":")
    return getattr(importlib.import_module(module), name)()
