"""Reading a service's ``GET /metrics``: Prometheus's own checker (``promtool check metrics``, from Debian's
``prometheus`` package) and the client library's parser."""

from __future__ import annotations

import shutil
import subprocess

import httpx
from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.samples import Sample

PROMETHEUS_TEXT = "text/plain; version=0.0.4; charset=utf-8"


def scrape(client: httpx.Client, path: str = "/metrics") -> str:
    """The text of one scrape, checked as Prometheus would check it: status, content type, promtool."""
    r = client.get(path)
    assert r.status_code == 200, (r.status_code, r.text[:300])
    assert r.headers["content-type"] == PROMETHEUS_TEXT
    assert_promtool_clean(r.text)
    return r.text


def assert_promtool_clean(text: str) -> None:
    """``promtool check metrics``: the text parses and breaks none of its lint rules (names, units, help)."""
    promtool = shutil.which("promtool")
    assert promtool, "promtool is missing: scripts/install-system.sh --test installs Debian's prometheus"
    done = subprocess.run([promtool, "check", "metrics"], input=text, capture_output=True, text=True)
    assert done.returncode == 0 and not done.stdout.strip() and not done.stderr.strip(), (
        done.returncode,
        done.stdout,
        done.stderr,
    )


def families(text: str) -> dict[str, str]:
    """Family name -> its type, as declared (``# TYPE``); counters named without their ``_total``."""
    return {f.name: f.type for f in text_string_to_metric_families(text)}


def samples(text: str, name: str) -> list[Sample]:
    """Every sample named ``name`` (``deskpilot_action_duration_seconds_count``, say)."""
    return [s for f in text_string_to_metric_families(text) for s in f.samples if s.name == name]


def value(text: str, name: str, **labels: str) -> float | None:
    """The one sample ``name`` with exactly these labels, or None."""
    found = [s.value for s in samples(text, name) if s.labels == labels]
    assert len(found) <= 1, (name, labels, found)
    return found[0] if found else None


def label_values(text: str, name: str, label: str) -> set[str]:
    return {s.labels[label] for s in samples(text, name) if label in s.labels}
