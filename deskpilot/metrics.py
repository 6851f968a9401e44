"""Prometheus metrics, what the three services share: a registry per app, the ``/metrics`` route, bounded
label values.

Each app gets a registry of its own (never the client library's global one, so several apps in one process
never collide), holding the client library's process, platform and garbage-collector collectors and the
service's own families, which live next to what they measure (``deskpilot/desktop/metrics.py``,
``deskpilot/tasks/metrics.py``, ``deskpilot/ui/metrics.py``). ``GET /metrics`` answers in the Prometheus
text format (0.0.4) behind the service's Guard like every other route: Prometheus sends the token as a
bearer token. A family that describes a state (the display, the tasks by status) is read when scraped, by the
service's ``refresh``; the others are recorded as things happen, each observation a dict lookup and an add.

Label values are bounded, so that no request can grow the number of series: a value from a fixed set, or
``OTHER`` (``children``); a free-form one (a model's name) is itself until ``MAX_FREE_VALUES`` distinct values
have been seen, then ``OTHER`` (``Bounded``). Never a task id, never a raw path.

``DESKPILOT_METRICS=off`` serves no ``/metrics`` and records nothing (``enabled``).
"""

from __future__ import annotations

import bisect
import itertools
from collections.abc import Awaitable, Callable, Iterable, Iterator
from typing import TypeVar

from prometheus_client import (
    CONTENT_TYPE_PLAIN_0_0_4,
    CollectorRegistry,
    GCCollector,
    PlatformCollector,
    ProcessCollector,
    disable_created_metrics,
    generate_latest,
)
from prometheus_client.core import HistogramMetricFamily
from prometheus_client.registry import Collector
from prometheus_client.utils import floatToGoString
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from deskpilot.config import MetricsSettings

OTHER = "other"  # the label value of anything outside a family's known values
MAX_FREE_VALUES = 50  # distinct values of a free-form label (model names) before the rest are OTHER
PATH = "/metrics"

# No `_created` series beside every counter and histogram: they double the series and no dashboard uses them.
disable_created_metrics()  # type: ignore[no-untyped-call]

# Reads what a scrape reports as of now (the display's state, the tasks by status) into the families.
Refresh = Callable[[Request], Awaitable[None]]


def enabled(settings: MetricsSettings | None = None) -> bool:
    """Whether metrics are on (``DESKPILOT_METRICS``, default on)."""
    return (settings or MetricsSettings()).metrics == "on"


def new_registry() -> CollectorRegistry:
    """A registry for one app, with the process (CPU, memory, file descriptors), platform (Python version)
    and garbage-collector collectors."""
    registry = CollectorRegistry(auto_describe=True)
    ProcessCollector(registry=registry)
    PlatformCollector(registry=registry)
    GCCollector(registry=registry)
    return registry


Child = TypeVar("Child")


def children(labelled: Callable[[str], Child], values: Iterable[str]) -> dict[str, Child]:
    """The child of each of ``values`` and of ``OTHER``, made up front: recording is then ``get(value,
    other)`` and an add, and every known value is exported (at zero) before its first observation."""
    return {value: labelled(value) for value in (*values, OTHER)}


class Series:
    """One labelled series of a ``Histogram``: counts by bucket (the last +Inf), and their sum."""

    __slots__ = ("bounds", "counts", "sum")

    def __init__(self, bounds: tuple[float, ...]) -> None:
        self.bounds, self.counts, self.sum = bounds, [0] * (len(bounds) + 1), 0.0

    def observe(self, amount: float) -> None:
        self.counts[bisect.bisect_left(self.bounds, amount)] += 1  # the first bucket whose le >= amount
        self.sum += amount


class Histogram(Collector):
    """A histogram family of one label, its values known up front (``OTHER`` among them when anything else may
    come, as ``children`` makes them), each ``Series`` recorded by the thread that serves (a service's event
    loop, which also answers the scrape) and no other: no lock to take, an observation is a bisect and two
    adds. The client library's ``Histogram`` takes a lock for the sum and another for the bucket, which it
    looks for in Python: ~7,700 instructions an observation against ~1,500, on every action's path. Exported
    as that one is (``_bucket``, ``_count``, ``_sum``), by the same registry."""

    def __init__(
        self,
        name: str,
        documentation: str,
        label: str,
        values: Iterable[str],
        buckets: Iterable[float],
        registry: CollectorRegistry,
    ) -> None:
        self.name, self.documentation, self.label = name, documentation, label
        bounds = tuple(float(b) for b in buckets)  # ascending
        self.le = [*(floatToGoString(b) for b in bounds), "+Inf"]  # type: ignore[no-untyped-call]
        self.series = {value: Series(bounds) for value in values}
        registry.register(self)

    def collect(self) -> Iterator[HistogramMetricFamily]:
        family = HistogramMetricFamily(self.name, self.documentation, labels=[self.label])
        for value, series in self.series.items():
            cumulative = itertools.accumulate(series.counts)
            family.add_metric([value], list(zip(self.le, cumulative, strict=True)), series.sum)
        yield family


class Bounded:
    """A free-form label's values: each is itself until ``cap`` distinct ones have been seen, then every new
    one is ``OTHER`` (and is not remembered, so neither the series nor this map grow further)."""

    def __init__(self, cap: int = MAX_FREE_VALUES) -> None:
        self.cap = cap
        self._seen: set[str] = set()

    def __call__(self, value: str) -> str:
        if value in self._seen:
            return value
        if len(self._seen) >= self.cap:
            return OTHER
        self._seen.add(value)
        return value


def route(registry: CollectorRegistry, refresh: Refresh | None = None) -> Route:
    """``GET /metrics`` of ``registry``; ``refresh`` runs first. Not in the OpenAPI document: it is for
    Prometheus, not for the API's clients (docs/operations.md#metrics)."""

    async def metrics(request: Request) -> Response:
        if refresh is not None:
            await refresh(request)
        return Response(generate_latest(registry), headers={"Content-Type": CONTENT_TYPE_PLAIN_0_0_4})

    return Route(PATH, metrics, methods=["GET"], include_in_schema=False)
