"""The X server goes away and comes back (supervisord restarting Xvfb): 503 meanwhile, then it just works."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import httpx

from deskpilot.config import DesktopSettings
from deskpilot.desktop.api import create_app
from testbed.net import ServerThread
from testbed.xvfb import start_xvfb
from tests.integration.desktop.conftest import stop_process, wait_for


def test_display_loss_answers_503_then_reconnects_without_a_restart() -> None:
    first = start_xvfb()
    second = None
    try:
        app = create_app(DesktopSettings(display=first.name))
        with ServerThread(app) as server, httpx.Client(timeout=30) as http:
            move = {"action": "move_mouse", "coordinates": {"x": 10, "y": 10}}
            assert http.post(f"{server.url}/computer-use", json=move).status_code == 200
            assert http.post(f"{server.url}/computer-use", json={"action": "screenshot"}).status_code == 200

            first.stop()
            for body in (move, {"action": "screenshot"}, {"action": "cursor_position"}):
                r = http.post(f"{server.url}/computer-use", json=body)
                assert r.status_code == 503, r.text
                assert r.headers["Retry-After"] and r.json()["success"] is False
                assert "not available" in r.json()["error"]
            health = http.get(f"{server.url}/health").json()
            assert health["status"] == "degraded" and health["display"] is False

            number = first.name.lstrip(":")
            second = subprocess.Popen(
                [
                    "Xvfb",
                    first.name,
                    "-screen",
                    "0",
                    "1920x1080x24",
                    "-nolisten",
                    "tcp",
                    "+extension",
                    "XTEST",
                ],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                start_new_session=True,
            )
            wait_for(lambda: Path(f"/tmp/.X11-unix/X{number}").exists(), 10, "the new Xvfb")
            deadline = time.monotonic() + 10
            while http.post(f"{server.url}/computer-use", json=move).status_code != 200:
                assert time.monotonic() < deadline, "no reconnect"
                time.sleep(0.1)
            r = http.post(f"{server.url}/computer-use", json={"action": "screenshot"})
            assert r.status_code == 200
            assert http.get(f"{server.url}/health").json() | {"version": 0} == {
                "status": "ok",
                "display": True,
                "capture": "shm",
                "version": 0,
            }
    finally:
        first.stop()
        if second is not None:
            stop_process(second)
