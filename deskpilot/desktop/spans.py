"""The desktop service's traces (deskpilot/tracing.py), on the hot path of every action.

``CallerContext`` keeps a request's ``traceparent`` (the agent's ``desktop.action``) while it runs;
``perform(...)`` is the span of one action, ``desktop.perform``, its child (or the root of a trace of its own
when the request carried none). Both exist only when traces are on; off, ``perform`` returns a shared object
that does nothing.

An action's span costs its request a few microseconds: its ids are made when it starts (the action's log
line carries them), and at its end a tuple joins a queue. A thread of its own writes the queue as OTLP
(otlp.py) and sends it with the exporter ``tracing.setup`` made, in batches as the SDK's batch processor
would, and when the service stops (``drain``). The SDK's own span (started, its attributes set under a lock,
each processor told, ended), ~15 µs in a loop, cost ~50 µs on a request: 8 % of a bare click's 0.6 ms; its
way to the wire (a ``ReadableSpan``, its encoder's messages) ~200,000 instructions a span in a thread that
holds the interpreter while requests wait (bench/tracing.py).
The sampling is the SDK's default: the caller's decision when it sent one, else the provider's sampler.
With a provider set up by someone else (``opentelemetry-instrument``), the SDK's own span is used.
"""

from __future__ import annotations

import collections
import logging
import os
import random
import threading
import time
from collections.abc import Awaitable, Callable
from contextvars import ContextVar
from types import TracebackType
from typing import TYPE_CHECKING, Any, Self

from deskpilot import tracing
from deskpilot.desktop import otlp

if TYPE_CHECKING:
    from starlette.types import ASGIApp, Receive, Scope, Send

log = logging.getLogger(__name__)
NAME = "desktop.perform"
SCOPE = "deskpilot.desktop.controller"
EVERY_S = 0.5
CHUNK = 32  # spans made between two moments the thread lets the event loop have the interpreter
_caller: ContextVar[bytes | None] = ContextVar("deskpilot_traceparent", default=None)
# (name, trace id, span id, parent id or None, start ns, end ns, attributes, failed) of each ended span
Ended = tuple[str, str, str, str | None, int, int, dict[str, Any], bool]


class CallerContext:
    """ASGI middleware: an HTTP request's ``traceparent``, kept as it came (or none) for its asyncio task,
    which uvicorn makes for each request (read by ``perform``). It has no frame of its own in the request's
    chain of awaits: one costs each await of a request (~35 µs on a task's creation, bench/tracing.py), and
    the value lasts as long as the request's task. Installed when traces are on."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    def __call__(self, scope: Scope, receive: Receive, send: Send) -> Awaitable[None]:
        if scope["type"] == "http":
            value = None
            for name, header in scope["headers"]:  # 0.24 µs for nine headers, half of dict(headers).get()
                if name == b"traceparent":
                    value = header
                    break
            _caller.set(value)
        return self.app(scope, receive, send)


class Off:
    """The span when traces are off: nothing, at the cost of a few calls."""

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def failed(self, exc: BaseException, outcome: str) -> None:
        return None

    def done(self, settle_ms: float | None, settled: bool | None) -> None:
        return None


OFF = Off()


class Perform:
    """``desktop.perform``: its ids those of the action's log lines, queued at its end."""

    __slots__ = (
        "attributes",
        "failure",
        "parent_id",
        "recorder",
        "sampled",
        "span_id",
        "start",
        "token",
        "trace_id",
    )

    def __init__(self, recorder: Recorder, attributes: dict[str, Any]) -> None:
        self.recorder, self.attributes, self.failure = recorder, attributes, False
        caller = _caller.get()
        parent = tracing.TRACEPARENT.fullmatch(caller) if caller else None  # servers strip a header's blanks
        if parent is not None:
            self.trace_id, self.parent_id = parent[1].decode(), parent[2].decode()
            self.sampled = bool(int(parent[3], 16) & 1)
        else:
            self.trace_id, self.parent_id = f"{random.getrandbits(128) or 1:032x}", None
            self.sampled = recorder.sample(int(self.trace_id, 16), attributes)
        self.span_id = f"{random.getrandbits(64) or 1:016x}"
        self.start = time.time_ns()

    def __enter__(self) -> Self:
        self.token = tracing.log_ids.set((self.trace_id, self.span_id))
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        tracing.log_ids.reset(self.token)
        if self.sampled:
            ended = (self.trace_id, self.span_id, self.parent_id, self.start, time.time_ns())
            self.recorder.queue.append((NAME, *ended, self.attributes, self.failure))

    def failed(self, exc: BaseException, outcome: str) -> None:
        """Its type, never its message (which may quote what was typed)."""
        self.attributes |= {"deskpilot.outcome": outcome, "error.type": type(exc).__name__}
        self.failure = True

    def done(self, settle_ms: float | None, settled: bool | None) -> None:
        self.attributes["deskpilot.outcome"] = "ok"
        if settle_ms is not None:
            self.attributes |= settle_attributes(settle_ms, settled)


class Recorder:
    """The queue of ended spans, and the thread that writes them as OTLP (otlp.py) and sends them with the
    exporter ``tracing.setup`` made: when ``OTEL_BSP_MAX_EXPORT_BATCH_SIZE`` spans are queued or
    ``OTEL_BSP_SCHEDULE_DELAY`` has passed, as the SDK's batch processor would (the same variables and
    defaults)."""

    def __init__(self, provider: Any, send: Callable[[bytes], object]) -> None:
        resource = provider.resource
        self.provider, self.send = provider, send
        self.batch = otlp.Batch(resource.attributes, SCOPE, resource_schema=resource.schema_url or "")
        self.size = _setting("OTEL_BSP_MAX_EXPORT_BATCH_SIZE", 512)
        self.delay_s = _setting("OTEL_BSP_SCHEDULE_DELAY", 5000) / 1000
        # beyond OTEL_BSP_MAX_QUEUE_SIZE the oldest are dropped, never waited for
        self.queue: collections.deque[Ended] = collections.deque(
            maxlen=_setting("OTEL_BSP_MAX_QUEUE_SIZE", 2048)
        )
        self.lock = threading.Lock()
        self.thread = threading.Thread(target=self._run, name="desktop spans", daemon=True)
        self.thread.start()

    def sample(self, trace_id: int, attributes: dict[str, Any]) -> bool:
        """The provider's sampler on a span without a parent."""
        from opentelemetry.trace import SpanKind

        result = self.provider.sampler.should_sample(None, trace_id, NAME, SpanKind.SERVER, attributes)
        return bool(result.decision.is_sampled())

    def _run(self) -> None:
        sent = time.monotonic()
        while True:
            time.sleep(min(EVERY_S, self.delay_s))
            if len(self.queue) >= self.size or time.monotonic() - sent >= self.delay_s:
                self.drain()
                sent = time.monotonic()

    def drain(self) -> None:
        """Send every queued span (blocking: in the recorder's thread, or one of the loop's at the end)."""
        with self.lock:
            written: list[bytes] = []
            while self.queue:
                if len(written) % CHUNK == CHUNK - 1:
                    time.sleep(0)  # a request waiting for the GIL gets it now, not at the switch interval
                written.append(otlp.span(*self.queue.popleft()))
        for request in self.batch.requests(written, self.size):
            try:
                self.send(request)  # the exporter's client retries, and logs what it could not send
            except Exception as exc:  # the thread lives on: traces are never worth a service
                log.warning("spans not sent: %s", type(exc).__name__)


def _setting(name: str, default: int) -> int:
    try:
        return max(1, int(os.environ.get(name, "")))
    except ValueError:
        return default


class SdkPerform:
    """``desktop.perform`` as the SDK's own span: a provider set up by someone else, its processors told."""

    def __init__(self, attributes: dict[str, Any]) -> None:
        from opentelemetry import context, trace

        caller = _caller.get()
        parent = tracing.extract({"traceparent": caller.decode("latin-1")}) if caller else None
        self.span = trace.get_tracer(SCOPE).start_span(
            NAME, context=parent, kind=trace.SpanKind.SERVER, attributes=attributes
        )
        self.context = context

    def __enter__(self) -> Self:
        from opentelemetry import trace

        self.token = self.context.attach(trace.set_span_in_context(self.span))
        return self

    def __exit__(self, *exc: object) -> None:
        self.context.detach(self.token)
        self.span.end()

    def failed(self, exc: BaseException, outcome: str) -> None:
        tracing.failed(self.span, exc, outcome)

    def done(self, settle_ms: float | None, settled: bool | None) -> None:
        self.span.set_attributes(settle_attributes(settle_ms, settled))


def settle_attributes(settle_ms: float | None, settled: bool | None) -> dict[str, Any]:
    """A successful action's: its outcome, and its settle when it asked for one."""
    if settle_ms is None:
        return {"deskpilot.outcome": "ok"}
    settle = {"deskpilot.settle_ms": round(settle_ms, 1), "deskpilot.settled": bool(settled)}
    return {"deskpilot.outcome": "ok", **settle}


_recorder: list[Recorder] = []  # made at the first span, once traces are on


def perform(action: str, actor: str, task: str | None) -> Perform | SdkPerform | Off:
    """The span of one action sent by ``actor`` (for ``task``, the agent's): ``OFF`` when traces are off."""
    attributes: dict[str, Any] = {"deskpilot.action": action, "deskpilot.actor": actor}
    if task:
        attributes["deskpilot.task.id"] = task
    if _recorder:  # the path of every action but the first, with traces on
        return Perform(_recorder[0], attributes)
    if not tracing.on():
        return OFF
    pipeline = tracing.pipeline()
    if pipeline is None:
        return SdkPerform(attributes)
    if not _recorder:
        _recorder.append(Recorder(*pipeline))
    return Perform(_recorder[0], attributes)


def drain() -> None:
    """Send the spans still queued (the service is stopping; blocking, up to the exporter's time-out)."""
    for recorder in _recorder:
        recorder.drain()
