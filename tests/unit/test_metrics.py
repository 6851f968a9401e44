"""The shared parts of the metrics (deskpilot/metrics.py): bounded label values, a registry per app, the
switch."""

from __future__ import annotations

from prometheus_client import Histogram, generate_latest

from deskpilot import metrics
from deskpilot.config import MetricsSettings
from deskpilot.desktop.metrics import DesktopMetrics
from deskpilot.metrics import OTHER, Bounded, children
from deskpilot.tasks.metrics import TaskMetrics
from deskpilot.ui.metrics import RequestCounter


def test_free_values_are_themselves_up_to_the_cap_then_other() -> None:
    bounded = Bounded(cap=3)
    assert [bounded(v) for v in ("a", "b", "a", "c", "d", "e", "b")] == [
        "a",
        "b",
        "a",
        "c",
        OTHER,
        OTHER,
        "b",
    ]
    for n in range(10_000):  # what is refused is not remembered: nothing grows
        assert bounded(f"model-{n}") == OTHER
    assert len(bounded._seen) == 3


def test_children_cover_the_known_values_and_other() -> None:
    family = Histogram("deskpilot_test_seconds", "test", ["kind"], registry=metrics.new_registry())
    made = children(family.labels, ("a", "b"))
    assert set(made) == {"a", "b", OTHER}
    made.get("unknown", made[OTHER]).observe(1)
    assert made[OTHER] is family.labels(OTHER)


def test_the_histogram_is_exported_as_the_client_librarys() -> None:
    """Same observations, same text: the bucket an amount on a bound falls in, counts, sum, other."""
    ours, theirs = metrics.new_registry(), metrics.new_registry()
    buckets = (0.001, 0.5, 1, 2.5)
    made = metrics.Histogram("deskpilot_t_seconds", "doc", "kind", ("a", "b", OTHER), buckets, ours).series
    library = Histogram("deskpilot_t_seconds", "doc", ["kind"], buckets=buckets, registry=theirs)
    for kind, amount in [("a", 0.001), ("a", 0.0011), ("b", 2.5), ("a", 7.0), (OTHER, 0.0), ("a", 0.5)]:
        made[kind].observe(amount)
        library.labels(kind).observe(amount)
    assert "deskpilot_t_seconds_bucket" in generate_latest(ours).decode()
    family = [m for m in ours.collect() if m.name == "deskpilot_t_seconds"]
    expected = [m for m in theirs.collect() if m.name == "deskpilot_t_seconds"]
    assert family == expected


def test_each_app_has_a_registry_of_its_own() -> None:
    """Two apps of a service in one process (the tests do it all the time) register the same names."""
    first, second = metrics.new_registry(), metrics.new_registry()
    for registry in (first, second):
        DesktopMetrics(registry)
        TaskMetrics(registry)
        RequestCounter(app=None, registry=registry)  # type: ignore[arg-type]
    text = generate_latest(first).decode()
    assert "deskpilot_action_duration_seconds_bucket" in text and "process_cpu_seconds_total" in text
    assert "_created" not in text  # no creation-time series beside each counter and histogram


def test_the_switch() -> None:
    assert metrics.enabled(MetricsSettings(metrics="on"))
    assert not metrics.enabled(MetricsSettings(metrics="off"))
    assert MetricsSettings.model_fields["metrics"].default == "on"
