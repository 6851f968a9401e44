"""A token sent in a URL (``?token=...``) never reaches a log line of any service, whatever the logging setup:
each service runs as the appliance runs it (uvicorn, its factory, the desktop service's ``--no-access-log``),
and under other setups (access lines on, JSON lines, a ``--log-config`` with a handler of its own, an app
made before uvicorn sets up its logging). Everything the process writes is read.

The desktop service is given only the token's digest, so the log format's masking of the token's value
(``DESKPILOT_TOKEN``) cannot hide it; a guessed token, in no environment, is sent to every service.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from websockets.exceptions import InvalidStatus
from websockets.sync.client import connect

from deskpilot.security import digest
from testbed.desktop_files import private_files_dir
from testbed.net import free_port, wait_http
from testbed.security import TOKEN
from testbed.xvfb import Display

ROOT = Path(__file__).resolve().parents[2]
GUESS = "guessed-token-3b9f0d27c4e1a8"  # in no environment: nothing but the redaction can hide it
FACTORIES = {
    "desktop": "deskpilot.desktop.api:create_app",
    "tasks": "deskpilot.tasks.app:create_app",
    "ui": "deskpilot.ui.server:create_app",
}
# a page and a WebSocket of each service (refused without the token)
PAGE = {"desktop": "/docs", "tasks": "/docs", "ui": "/"}
SOCKET = {"desktop": "/vnc/websockify", "tasks": "/ws", "ui": "/api/ws"}
# A logging setup of an operator's own: a plain handler on the root logger, beside the services' own.
LOG_CONFIG = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "FOREIGN %(levelname)s %(name)s %(message)s"}},
    "handlers": {
        "out": {"class": "logging.StreamHandler", "formatter": "plain", "stream": "ext://sys.stdout"}
    },
    "root": {"handlers": ["out"], "level": "INFO"},
}
# The app made first, then uvicorn's own default logging set up over it (its handlers, its formatters).
APP_FIRST = (
    "import sys, uvicorn, importlib\n"
    "module, name = sys.argv[1].split(':')\n"
    "app = getattr(importlib.import_module(module), name)()\n"
    "uvicorn.run(app, host='127.0.0.1', port=int(sys.argv[2]))\n"
)
SETUPS = ["appliance", "access-log", "json", "log-config", "app-first"]


@dataclass
class Service:
    name: str
    setup: str
    url: str
    output: Path
    proc: subprocess.Popen[bytes]

    def stop(self) -> str:
        """Stop the service (its process group) and return everything it wrote: complete once it exited."""
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        return self.output.read_text()


def environment(name: str, display: Display, files: Path, tmp_path: Path) -> dict[str, str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    if name == "desktop":  # as in the appliance: the digest only
        return env | {
            "DESKPILOT_TOKEN_SHA256": digest(TOKEN),
            "DESKTOP_DISPLAY": display.name,
            "DESKTOP_HOME": str(files.parent),
            "DESKTOP_FILES_DIR": str(files),
        }
    env |= {"DESKPILOT_TOKEN": TOKEN}
    if name == "tasks":
        return env | {
            "TASKS_DATABASE_URL": f"sqlite:///{tmp_path}/agent.db",
            "TASKS_WORKER_ENABLED": "false",
            "TASKS_EXECUTOR": "",
            "TASKS_DESKTOP_URL": f"http://127.0.0.1:{free_port()}",
        }
    return env | {"UI_TASKS_URL": f"http://127.0.0.1:{free_port()}"}


def command(name: str, setup: str, port: int, tmp_path: Path) -> list[str]:
    if setup == "app-first":
        return [sys.executable, "-c", APP_FIRST, FACTORIES[name], str(port)]
    uvicorn = [sys.executable, "-m", "uvicorn", "--factory", FACTORIES[name]]
    uvicorn += ["--host", "127.0.0.1", "--port", str(port), "--timeout-graceful-shutdown", "1"]
    if setup == "appliance" and name == "desktop":
        uvicorn.append("--no-access-log")  # supervisord.conf's
    if setup == "log-config":
        config = tmp_path / "logging.json"
        config.write_text(json.dumps(LOG_CONFIG))
        uvicorn += ["--log-config", str(config)]
    return uvicorn


@pytest.fixture
def service(request: pytest.FixtureRequest, display: Display, tmp_path: Path) -> Iterator[Service]:
    name, setup = request.param
    port = free_port()
    output = tmp_path / "output.log"
    with private_files_dir() as files, output.open("wb") as sink:
        env = environment(name, display, files, tmp_path)
        if setup == "json":
            env["DESKPILOT_LOG_FORMAT"] = "json"
        proc = subprocess.Popen(
            command(name, setup, port, tmp_path),
            cwd=ROOT,
            env=env,
            stdout=sink,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        running = Service(name, setup, f"http://127.0.0.1:{port}", output, proc)
        try:
            wait_http(f"{running.url}/health", timeout=60, ok=(200, 503))
            yield running
        finally:
            running.stop()


def send_tokens_in_urls(s: Service) -> None:
    """The token and a guess in query strings: to the probe, a page, a page with the token as a bearer
    too, and a WebSocket handshake (uvicorn writes those lines on another logger)."""
    bearer = {"Authorization": f"Bearer {TOKEN}"}
    with httpx.Client(base_url=s.url, timeout=10) as client:
        for secret in (TOKEN, GUESS):
            assert client.get(f"/health?token={secret}").status_code in (200, 503)
            assert client.get(f"{PAGE[s.name]}?x=1&token={secret}").status_code in (401, 303)
            assert client.get(f"/health?access_token={secret}&api_key={secret}").status_code in (200, 503)
        assert client.get(f"{PAGE[s.name]}?token={TOKEN}", headers=bearer).status_code in (200, 502)
    for secret in (TOKEN, GUESS):
        url = f"{s.url.replace('http', 'ws')}{SOCKET[s.name]}?token={secret}"
        with pytest.raises(InvalidStatus, match="401"), connect(url, open_timeout=5):
            pass  # refused before the upgrade


@pytest.mark.timeout(120)
@pytest.mark.parametrize(
    "service",
    [(name, setup) for name in FACTORIES for setup in SETUPS if setup != "access-log" or name == "desktop"],
    ids=lambda p: f"{p[0]}-{p[1]}",
    indirect=True,
)
def test_a_token_in_a_url_reaches_no_log_line(service: Service) -> None:
    send_tokens_in_urls(service)
    logged = service.stop()
    setup = service.setup

    assert TOKEN not in logged and GUESS not in logged, logged
    assert digest(TOKEN) not in logged
    # the controls: the lines were written, with the value masked and the rest of the query kept
    assert "WebSocket" in logged and "token=***" in logged, logged
    access_lines = [line for line in logged.splitlines() if '"GET /' in line]
    if setup == "appliance" and service.name == "desktop":
        assert access_lines == [], "--no-access-log is in force"
    else:
        assert any("?x=1&token=***" in line for line in access_lines), logged
        assert any("access_token=***&api_key=***" in line for line in access_lines), logged
    if setup == "log-config":
        assert any(line.startswith("FOREIGN INFO uvicorn.access") for line in access_lines), logged
    if setup == "json":
        assert all(json.loads(line)["message"] for line in access_lines), logged
