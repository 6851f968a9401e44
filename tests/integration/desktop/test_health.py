"""/health and /health/live, and the one log line per action."""

from __future__ import annotations

import logging
import os
import signal
import time
from typing import Any

import pytest

from deskpilot import __version__
from testbed.xvfb import start_xvfb
from tests.integration.desktop.conftest import Desktop, serve, wait_for


def test_health_lists_each_probe_and_the_capture_path(desktop: Desktop) -> None:
    r = desktop.http.get("/health")
    assert r.status_code == 200
    assert r.json() == {"status": "ok", "display": True, "capture": "shm", "version": __version__}


def test_health_is_503_while_the_display_is_gone_and_liveness_stays_200() -> None:
    d = start_xvfb()
    try:
        with serve(d) as desktop:
            assert desktop.http.get("/health").status_code == 200
            d.stop()
            r = desktop.http.get("/health")
            assert r.status_code == 503, r.text
            body = r.json()
            assert body["status"] == "degraded" and body["display"] is False
            assert "not available" in body["problems"]["display"]
            live = desktop.http.get("/health/live")
            assert live.status_code == 200 and live.json() == {"status": "ok", "version": __version__}
    finally:
        d.stop()


def test_health_answers_within_its_bound_when_the_x_server_hangs() -> None:
    d = start_xvfb()
    try:
        with serve(d) as desktop:
            assert desktop.http.get("/health").status_code == 200
            os.kill(d.xvfb.pid, signal.SIGSTOP)
            try:
                started = time.monotonic()
                r = desktop.http.get("/health", timeout=10)
                assert time.monotonic() - started < 3, "the probe was not bounded"
                assert r.status_code == 503 and "within 1 s" in r.json()["problems"]["display"], r.text
                started = time.monotonic()
                assert desktop.http.get("/health/live").status_code == 200
                assert time.monotonic() - started < 0.5, "the event loop was blocked"
            finally:
                os.kill(d.xvfb.pid, signal.SIGCONT)
            wait_for(lambda: desktop.http.get("/health").status_code == 200, 10, "a healthy display again")
    finally:
        d.stop()


def test_each_action_logs_one_line_with_its_name_duration_and_outcome(
    desktop: Desktop, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    desktop.act(action="move_mouse", coordinates={"x": 5, "y": 5})
    assert desktop.post(action="read_file", path="deskpilot-no-such-file.txt").status_code == 404
    lines: list[Any] = [r for r in caplog.records if hasattr(r, "outcome")]  # with the fields logged as extra
    assert [(r.action, r.outcome) for r in lines] == [("move_mouse", "ok"), ("read_file", "404")]
    assert all(r.levelno == logging.INFO and isinstance(r.ms, float) and r.ms >= 0 for r in lines)
