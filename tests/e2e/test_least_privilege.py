"""Least privilege inside the booted appliance: the desktop user is untrusted (it runs whatever the agent or a
web page makes it run), so nothing it runs, nor any other local user, may reach the live view around the
desktop service, the token, or another service's process. Each probe runs as that user (runuser), with the
system's python3, as an attacker's script would."""

from __future__ import annotations

import base64
import json
import os
import re
import stat
import subprocess
import time
from pathlib import Path

import httpx
import psutil
import pytest

from testbed.appliance import Appliance
from testbed.probes import BIND, HANDS, REACH, RFB, TCP_RFB
from testbed.timing import wait_until

pytestmark = pytest.mark.e2e

DESKTOP_USER = "user"
DISPLAY_USER = "deskpilot-display"
DISPLAY_SIDE = ("xvfb", "x11vnc", "desktop-api")


def as_user(user: str, script: str, *args: str) -> dict[str, object]:
    """Run a python3 script as `user`; it prints one JSON object."""
    out = subprocess.run(
        ["runuser", "-u", user, "--", "python3", "-c", script, *args],
        capture_output=True,
        text=True,
        timeout=60,
        cwd="/",
    )
    assert out.returncode == 0, out.stderr
    return dict(json.loads(out.stdout))


def test_the_vnc_server_listens_on_no_tcp_port_and_only_the_display_owner_reaches_its_socket(
    appliance: Appliance,
) -> None:
    x11vnc = psutil.Process(appliance.pid("x11vnc"))
    assert x11vnc.username() == DISPLAY_USER
    assert not [c for c in x11vnc.net_connections("inet") if c.status == psutil.CONN_LISTEN]
    sock = appliance.run_dir / "display" / "vnc.sock"
    assert stat.S_ISSOCK(sock.stat().st_mode)
    directory = sock.parent.stat()
    assert stat.S_IMODE(directory.st_mode) == 0o700 and sock.parent.owner() == DISPLAY_USER
    for user in (DESKTOP_USER, "nobody", "deskpilot"):
        probe = as_user(user, RFB, str(sock))
        assert probe == {"connected": False, "error": "Permission denied"}, (user, probe)
    # and no RFB server answers on any loopback port the appliance's processes listen on
    ports = sorted(
        {c.laddr.port for p in appliance.processes() for c in _inet(p) if c.status == psutil.CONN_LISTEN}
    )
    assert as_user("nobody", TCP_RFB, *map(str, ports)) == {"rfb": []}, ports
    # the desktop service, the display's owner, is the one way in: the live view still works
    assert httpx.get(f"{appliance.desktop_url}/health", headers=appliance.headers).json()["vnc"] is True


def _inet(p: psutil.Process) -> list[psutil._common.pconn]:
    try:
        return p.net_connections("inet")
    except (psutil.NoSuchProcess, psutil.AccessDenied):
        return []


def test_no_desktop_user_process_can_signal_trace_or_read_the_display_side(appliance: Appliance) -> None:
    pids = {program: appliance.pid(program) for program in (*DISPLAY_SIDE, "task-api", "ui")}
    for program, pid in pids.items():
        assert psutil.Process(pid).username() != DESKTOP_USER, program
    for user in (DESKTOP_USER, "nobody"):
        seen = as_user(user, REACH, *map(str, pids.values()))
        for program, pid in pids.items():
            assert seen[str(pid)] == {
                "signal": "EPERM",
                "ptrace": "EPERM",
                "mem": "EACCES",
                "environ": "EACCES",
            }, (user, program, seen[str(pid)])


def test_a_desktop_user_process_cannot_take_the_desktop_services_port(appliance: Appliance) -> None:
    taken = as_user(DESKTOP_USER, BIND, str(appliance.desktop_port))
    assert taken == {"bound": False, "error": "Address already in use"}, taken


def test_the_desktop_users_worker_serves_the_desktop_service_alone(appliance: Appliance) -> None:
    sock = appliance.run_dir / "hands" / "hands.sock"
    assert psutil.Process(appliance.pid("hands")).username() == DESKTOP_USER
    for user in ("nobody", "deskpilot", DESKTOP_USER):
        answer = as_user(user, HANDS, str(sock))
        # closed unanswered: an empty read, or the write refused (the worker hung up before it)
        assert answer in ({"answer": ""}, {"error": "Broken pipe"}, {"error": "Connection reset by peer"}), (
            user,
            answer,
        )
    r = httpx.post(f"{appliance.desktop_url}/command", json={"command": "id -un"}, headers=appliance.headers)
    assert r.status_code == 200 and r.json()["stdout"] == f"{DESKTOP_USER}\n", r.text[:300]


def test_the_task_service_opens_the_desktop_with_a_credential_that_opens_nothing_else(
    appliance: Appliance,
) -> None:
    credential = psutil.Process(appliance.pid("task-api")).environ()["TASKS_DESKTOP_TOKEN"]
    assert credential != appliance.token
    bearer = {"Authorization": f"Bearer {credential}"}
    assert httpx.get(f"{appliance.desktop_url}/journal", headers=bearer).status_code == 200
    assert httpx.get(f"{appliance.agent_url}/tasks", headers=bearer).status_code == 401
    assert httpx.get(f"{appliance.ui_url}/api/tasks", headers=bearer).status_code == 401


def _healthy(url: str) -> bool:
    try:
        return bool(httpx.get(url).json()["status"] == "ok")
    except httpx.HTTPError:  # not listening yet
        return False


def _memory(pid: int) -> bytes:
    """Every readable private mapping of the process (as root), as the issue's attacker read it."""
    chunks = []
    with open(f"/proc/{pid}/maps") as maps, open(f"/proc/{pid}/mem", "rb", 0) as mem:
        for line in maps:
            span, perms, *_ = line.split()
            if not perms.startswith("r") or line.rstrip().endswith(("[vvar]", "[vsyscall]")):
                continue
            start, end = (int(x, 16) for x in span.split("-"))
            if end - start > 1 << 30:
                continue
            try:
                mem.seek(start)
                chunks.append(mem.read(end - start))
            except OSError:
                continue
    return b"".join(chunks)


def test_the_token_never_reaches_the_desktop_service(appliance: Appliance, tmp_path: Path) -> None:
    """A task with an upload: the task service writes the file through the desktop service, and the UI proxies
    the live view; neither sends the token, so the desktop service's memory never holds it. The service starts
    afresh first: other tests may send it the token themselves, as any holder of the token may."""
    assert appliance.token
    appliance.ctl("restart", "desktop-api")
    wait_until(lambda: _healthy(f"{appliance.desktop_url}/health"), 30, what="the desktop service restarted")
    name = f"least-privilege-{os.getpid()}.txt"
    files = {"files": (name, b"uploaded through the desktop credential", "text/plain")}
    # a model of its own naming: the task runs (and fails, offline) after the upload, and the log it leaves
    # must not hold the session's provider settings (tests/e2e/test_secrets.py reads it afterwards)
    data = {"description": "least privilege: an upload", "model": "openai/least-privilege-probe"}
    url, headers = f"{appliance.agent_url}/tasks", appliance.headers
    r = httpx.post(url, data=data, files=files, headers=headers, timeout=30)
    assert r.status_code == 201, r.text[:300]
    target = appliance.home / "Desktop" / name
    deadline = time.monotonic() + 30
    while not target.exists():
        assert time.monotonic() < deadline, "the upload never reached the desktop"
        time.sleep(0.2)
    login = httpx.post(
        f"{appliance.ui_url}/login", data={"token": appliance.token}, follow_redirects=False, timeout=30
    )
    assert login.status_code in (302, 303), login.text[:300]
    view = httpx.get(f"{appliance.ui_url}/vnc/vnc.html", cookies=login.cookies, timeout=30)
    assert view.status_code == 200, view.text[:200]
    memory = _memory(appliance.pid("desktop-api"))
    token = appliance.token.encode()
    for form in (token, base64.b64encode(token), token.decode().encode("utf-16-le")):
        assert form not in memory
    assert re.search(rb"Bearer [A-Za-z0-9_-]{20,}", memory), "the probe reads the service's requests"
    target.unlink(missing_ok=True)
