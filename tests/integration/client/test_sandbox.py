"""deskpilot.sandbox(): a native one leaves nothing behind (processes, display, directories), and attaching
to a running appliance by URL neither starts nor stops anything."""

from __future__ import annotations

import glob
import secrets
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

import deskpilot
from deskpilot.client import Sandbox, processes
from deskpilot.client.native import DisplayTaken, NativeAppliance, free_display
from deskpilot.client.sandboxes import next_port
from testbed.xvfb import Display, start_xvfb_at

ROOT = Path(__file__).resolve().parents[3]


def started_since(before: set[int]) -> set[int]:
    """Our descendants that were not running at ``before``, those of trees running then (the session's
    sandbox, which starts programs of its own meanwhile) left out."""
    return set(processes.descendants(skip=before))


def still_running(pids: set[int]) -> list[str]:
    """Those of ``pids`` alive and not zombies (whoever adopted them), described."""
    return [processes.describe(pid) for pid in sorted(pids) if processes.alive(pid)]


def test_a_native_sandbox_leaves_nothing_behind() -> None:
    dirs_before = set(glob.glob("/tmp/deskpilot-sandbox-*"))
    pids_before = set(processes.descendants())
    with deskpilot.sandbox() as box:
        assert box.ready_seconds > 0 and box.token and len(box.token) >= 40
        display = box.desktop.health()  # answers with the token the sandbox made
        assert display["status"] == "ok"
        assert len(set(glob.glob("/tmp/deskpilot-sandbox-*")) - dirs_before) == 1
        started = started_since(pids_before)
        assert len(started) > 5
        urls = (box.desktop_url, box.agent_url, box.ui_url)
    assert still_running(started_since(pids_before)) == []
    assert still_running(started) == []  # nor adopted by init once the sandbox's reaper ended
    assert set(glob.glob("/tmp/deskpilot-sandbox-*")) == dirs_before
    for url in urls:
        with pytest.raises(httpx.ConnectError):
            httpx.get(f"{url}/health", timeout=2)


def taken(display: str) -> Display:
    """Another X server on ``display``, as a sandbox started at the same moment elsewhere would have."""
    server = start_xvfb_at(int(display[1:]))
    assert server is not None, f"{display} was not free"
    return server


def test_a_sandbox_whose_display_is_taken_before_its_xvfb_starts_moves_to_another() -> None:
    """Two sandboxes started at the same moment by processes that do not know of each other can both find
    one number free: the one whose Xvfb finds it taken starts again on another display."""
    appliance = NativeAppliance(token=secrets.token_urlsafe(32), services=("desktop",))
    chosen = appliance.display
    other = taken(chosen)
    try:
        appliance.start()
        appliance.wait_ready()
        assert appliance.display != chosen
        r = httpx.get(f"{appliance.desktop_url}/health", headers=appliance.headers, timeout=10)
        assert r.json()["status"] == "ok", r.text  # its display is its own, not the other server's
    finally:
        leftovers = appliance.shutdown()
        other.stop()
    assert leftovers == []


def test_a_display_given_and_taken_fails_at_once() -> None:
    """A display the caller named is never swapped for another: its appliance fails as soon as its Xvfb
    says why, not when the wait runs out."""
    other = taken(free_display())
    appliance = NativeAppliance(display=other.name, token=secrets.token_urlsafe(32), services=("desktop",))
    try:
        appliance.start()
        started = time.monotonic()
        with pytest.raises(DisplayTaken, match="taken by another X server"):
            appliance.wait_ready()
        assert time.monotonic() - started < 30 and appliance.display == other.name
    finally:
        leftovers = appliance.shutdown()
        other.stop()
    assert leftovers == []


def test_a_sandbox_of_the_desktop_alone_starts_the_others_when_first_used() -> None:
    """``services=["desktop"]``: the task service and the UI do not run until used (``agent``, ``start``);
    a reset does not start them; leaving stops what was started on the way."""
    pids_before = set(processes.descendants())
    with deskpilot.sandbox(services=["desktop"]) as box:
        assert box.services == ("desktop",)
        assert box.desktop.health()["status"] == "ok"
        for url in (box.agent_url, box.ui_url):
            with pytest.raises(httpx.ConnectError):
                httpx.get(f"{url}/health", timeout=2)
        box.reset()
        with pytest.raises(httpx.ConnectError):
            httpx.get(f"{box.agent_url}/health", timeout=2)
        assert box.agent.health()["status"] == "ok"  # started by its first use
        box.start("ui")
        assert httpx.get(f"{box.ui_url}/health", timeout=10).status_code == 200
        assert box.services == ("desktop", "tasks", "ui")
        box.start("ui")  # running: nothing to do
        with pytest.raises(ValueError, match="no service"):
            box.start("mail")
        started = started_since(pids_before)
    assert still_running(started_since(pids_before)) == []
    assert still_running(started) == []
    with pytest.raises(ValueError, match="no service"), deskpilot.sandbox(services=["desktop", "mail"]):
        pass


def test_a_sandbox_never_touches_the_callers_own_processes() -> None:
    """Programs the caller starts while a sandbox runs keep running after it stops, and keep their parent:
    their exit status is the caller's to collect."""
    with deskpilot.sandbox() as box:
        assert box.desktop.health()["status"] == "ok"
        lasting = subprocess.Popen(["sleep", "300"])
        failing = subprocess.Popen(["sh", "-c", "sleep 0.5; exit 3"])
    try:
        assert lasting.poll() is None, "the sandbox's stop killed a process of the caller's"
        assert failing.wait(10) == 3
    finally:
        lasting.kill()
        lasting.wait()


def test_attaching_by_url_starts_and_stops_nothing(box: Sandbox, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DESKPILOT_TOKEN", box.token or "")
    with deskpilot.sandbox(url=box.desktop_url, agent_url=box.agent_url) as attached:
        assert attached.token == box.token and attached.ready_seconds == 0
        assert attached.desktop.cursor_position() == box.desktop.cursor_position()
        assert attached.agent.health()["status"] == "ok"
    assert box.desktop.health()["status"] == "ok"


def test_the_task_service_is_on_the_next_port_by_default() -> None:
    assert next_port("http://10.0.0.5:9990/") == "http://10.0.0.5:9991"


def test_the_demo_runs_a_task_on_a_running_appliance(clean: Sandbox) -> None:
    """`make demo` against an appliance that runs already (here the session's sandbox, with its token)."""
    done = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "demo.py"), "--desktop-url", clean.desktop_url,
         "--token", clean.token or ""],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert "demo: COMPLETED" in done.stdout and "computer_type_text" in done.stdout
