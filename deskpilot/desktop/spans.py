"""The desktop service's traces (deskpilot/tracing.py), on the hot path of every action.

``perform(...)`` is the span of one action, ``desktop.perform``, the child of its request's ``traceparent``
(the agent's ``desktop.action``, read by the route: ``traceparent``), or the root of a trace of its own when
the request carried none (an action channel's, MCP's). It exists only when traces are on; off, ``perform``
returns a shared object that does nothing.

An action's span costs its request a few microseconds: its ids are made when it starts (the action's log
line carries them; span ids are made ahead, a thousand at a time), and at its end it joins a queue. A thread
of its own writes the queue as OTLP (otlp.py) and sends it with the exporter ``tracing.setup`` made, in
batches as the SDK's batch processor would, and when the service stops (``drain``). The SDK's own span
(started, its attributes set under a lock, each processor told, ended), ~15 µs in a loop, cost ~50 µs on a
request: 8 % of a bare click's 0.6 ms; its way to the wire (a ``ReadableSpan``, its encoder's messages)
~200,000 instructions a span in a thread that holds the interpreter while requests wait (bench/tracing.py).
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
from collections.abc import Callable
from types import TracebackType
from typing import TYPE_CHECKING, Any, Self

from deskpilot import tracing
from deskpilot.desktop import otlp

if TYPE_CHECKING:
    from starlette.types import Scope

log = logging.getLogger(__name__)
NAME = "desktop.perform"
SCOPE = "deskpilot.desktop.controller"
EVERY_S = 0.5
CHUNK = 32  # spans made between two moments the thread lets the event loop have the interpreter
_log_ids = tracing.log_ids
_match_traceparent = tracing.TRACEPARENT.fullmatch
SAMPLED = frozenset(b"13579bdf")  # the flags' last hex digit when their lowest bit, sampled, is set
ERROR = "error.type"  # the attribute of a failed span
SPAN_IDS = 1024
NO_ID = "0" * 16  # an invalid span id


def traceparent(scope: Scope) -> bytes | None:
    """An HTTP request's ``traceparent`` as it came, the parent of its action's span (``perform``); None
    without one, or when traces are off. Read by the routes that act (a middleware costs every request of the
    service a frame and a context variable: ~5,000 instructions a click, bench/tracing.py)."""
    if not _recorder and not tracing.on():
        return None
    headers: list[tuple[bytes, bytes]] = scope["headers"]
    for name, value in reversed(headers):  # clients add it after their own; a body's length follows
        if name == b"traceparent":
            return value
    return None


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
    """``desktop.perform``: its ids those of the action's log lines; queued itself at its end, if sampled."""

    __slots__ = ("attributes", "end", "parent_id", "queue", "span_id", "start", "token", "trace_id")

    def __init__(self, recorder: Recorder, attributes: dict[str, Any], caller: bytes | None) -> None:
        self.attributes = attributes
        self.parent_id: str | None
        if caller is not None and _match_traceparent(caller) is not None:  # servers strip a header's blanks
            text = caller.decode()
            self.trace_id, self.parent_id = text[3:35], text[36:52]
            sampled = caller[54] in SAMPLED
        else:
            self.trace_id, self.parent_id = f"{random.getrandbits(128) or 1:032x}", None
            sampled = recorder.sample(int(self.trace_id, 16), attributes)
        self.queue = recorder.queue if sampled else None
        self.span_id = recorder.span_ids.pop() if recorder.span_ids else recorder.more_span_ids()
        self.start = time.time_ns()

    def __enter__(self) -> Self:
        self.token = _log_ids.set((self.trace_id, self.span_id))
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        _log_ids.reset(self.token)
        if self.queue is not None:
            self.end = time.time_ns()
            self.queue.append(self)

    def failed(self, exc: BaseException, outcome: str) -> None:
        """Its type, never its message (which may quote what was typed)."""
        self.attributes |= {"deskpilot.outcome": outcome, ERROR: type(exc).__name__}

    def done(self, settle_ms: float | None, settled: bool | None) -> None:
        self.attributes["deskpilot.outcome"] = "ok"
        if settle_ms is not None:
            self.attributes |= settle_attributes(settle_ms, settled)

    def written(self) -> bytes:
        """As OTLP (otlp.py): failed when ``failed`` named an error."""
        failed = ERROR in self.attributes
        ids = (self.trace_id, self.span_id, self.parent_id)
        return otlp.span(NAME, *ids, self.start, self.end, self.attributes, failed)


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
        self.queue: collections.deque[Perform] = collections.deque(
            maxlen=_setting("OTEL_BSP_MAX_QUEUE_SIZE", 2048)
        )
        self.lock = threading.Lock()
        self.span_ids: list[str] = []  # made ahead (more_span_ids), taken with list.pop: atomic
        self.thread = threading.Thread(target=self._run, name="desktop spans", daemon=True)
        self.thread.start()

    def more_span_ids(self) -> str:
        """``SPAN_IDS`` span ids made for this span and the next: 16 hex digits each, from the system's random
        source (~300 instructions a span for a ``pop`` against ~2,000 to format a random number)."""
        made = os.urandom(8 * SPAN_IDS).hex()
        self.span_ids = [i for n in range(0, len(made), 16) if (i := made[n : n + 16]) != NO_ID]
        return self.span_ids.pop()

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
                written.append(self.queue.popleft().written())
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

    def __init__(self, attributes: dict[str, Any], caller: bytes | None) -> None:
        from opentelemetry import context, trace

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


def perform(action: str, actor: str, task: str | None, caller: bytes | None) -> Perform | SdkPerform | Off:
    """The span of one action sent by ``actor`` (for ``task``, the agent's), the child of ``caller`` when it
    is a valid ``traceparent`` (its request's, as ``traceparent`` read it): ``OFF`` when traces are off."""
    attributes: dict[str, Any] = {"deskpilot.action": action, "deskpilot.actor": actor}
    if task:
        attributes["deskpilot.task.id"] = task
    if _recorder:  # the path of every action but the first, with traces on
        return Perform(_recorder[0], attributes, caller)
    if not tracing.on():
        return OFF
    pipeline = tracing.pipeline()
    if pipeline is None:
        return SdkPerform(attributes, caller)
    if not _recorder:
        _recorder.append(Recorder(*pipeline))
    return Perform(_recorder[0], attributes, caller)


def drain() -> None:
    """Send the spans still queued (the service is stopping; blocking, up to the exporter's time-out)."""
    for recorder in _recorder:
        recorder.drain()
