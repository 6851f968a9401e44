"""The image booted as the README runs it (its two volumes, --shm-size, on 0.0.0.0 without a token, so it
generates one into the state volume), used as a person, an MCP client, the agent and an operator use it; then
stopped, and started again on the same volumes with a token given.

Order matters: the task writes a file into the home volume, the stop test stops the container, and the
restart test finds the task and the file again.
"""

from __future__ import annotations

import base64
import io
import json
import re
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, TypeVar

import httpx
import numpy as np
import psutil
import pytest
from mcp import Client
from mcp.client.sse import sse_client
from PIL import Image

from deskpilot.computer.actions import ACTION_MODELS
from deskpilot.scripted import Answer, Request, ScriptedModel, tool
from testbed import ROOT
from testbed.appliance import PROGRAMS
from testbed.container import HOME, RUN_DIR, TOKEN_FILE, Container
from testbed.probes import REACH, RFB

pytestmark = [pytest.mark.image, pytest.mark.timeout(1200)]  # the first test waits for a cold build

T = TypeVar("T")
LAUNCHERS = sorted(p.name for p in (ROOT / "rootfs" / "home" / "user" / "Desktop").glob("*.desktop"))


@dataclass
class Run:
    """What one test leaves for a later one."""

    container: Container
    boot_seconds: float
    task_id: str = ""
    note: str = field(default_factory=lambda: f"Documents/agent-{uuid.uuid4().hex[:8]}.txt")
    restarted: list[Container] = field(default_factory=list)


@pytest.fixture(scope="module")
def llm() -> Iterator[ScriptedModel]:
    """The scripted model, on the host's loopback, which the container shares."""
    with ScriptedModel().serve() as server:
        yield server


@pytest.fixture(scope="module")
def run(image: str, llm: ScriptedModel) -> Iterator[Run]:
    agent = {
        "AGENT_OPENAI_BASE_URL": llm.base_url,
        "AGENT_OPENAI_BASE_MODEL": llm.model,
        "AGENT_MODEL": f"local/{llm.model}",
    }
    container = Container(image, env=agent, token=None, host="0.0.0.0").run()
    state = Run(container, 0.0)
    try:
        state.boot_seconds = container.wait_health("healthy", timeout=120)
        container.read_token()
        yield state
    finally:
        for c in state.restarted:
            c.remove(volumes=False)
        container.remove()


def get(c: Container, url: str) -> httpx.Response:
    return httpx.get(url, headers=c.headers, timeout=30)


def computer(c: Container, action: str, **fields: object) -> httpx.Response:
    return httpx.post(
        f"{c.desktop_url}/computer-use", json={"action": action, **fields}, headers=c.headers, timeout=120
    )


def screenshot(c: Container) -> np.ndarray:
    r = computer(c, "screenshot")
    assert r.status_code == 200 and r.json()["success"], r.text[:300]
    image = Image.open(io.BytesIO(base64.b64decode(r.json()["data"]["image"]))).convert("RGB")
    return np.asarray(image).astype(np.int16)


def icon_rows(shot: np.ndarray, width: int = 160, bottom: int = 1000) -> list[tuple[int, int]]:
    """Runs of rows, in the launcher column, holding something icon-high (>= 30 px) on the plain backdrop."""
    backdrop = np.median(shot[100:bottom, 400:1800].reshape(-1, 3), axis=0)
    busy = np.abs(shot[:bottom, :width] - backdrop).sum(axis=2).max(axis=1) > 60
    runs, start = [], None
    for y, on in enumerate([*busy, False]):
        if on and start is None:
            start = y
        elif not on and start is not None:
            runs.append((start, y))
            start = None
    return [(a, b) for a, b in runs if b - a >= 30]


def active_window_class(c: Container) -> str:
    """WM_CLASS (instance.class, lower case) of the focused window, from xdotool and wmctrl."""
    active = int(c.exec("xdotool", "getactivewindow", user="user"))
    for line in c.exec("wmctrl", "-lx", user="user").splitlines():
        window, _, wm_class = line.split()[:3]
        if int(window, 16) == active:
            return wm_class.lower()
    raise AssertionError(f"window {active} is not among the managed windows")


def wait_for(check: Callable[[], T | None], timeout: float, what: str) -> T:
    """Call `check` until it returns something other than None."""
    deadline = time.monotonic() + timeout
    while (value := check()) is None:
        assert time.monotonic() < deadline, f"timed out after {timeout} s waiting for {what}"
        time.sleep(0.2)
    return value


# ------------------------------------------------------------------------------------------------ boot


def test_docker_reports_healthy_once_every_service_answers(run: Run) -> None:
    c = run.container
    for url in (c.desktop_url, c.agent_url, c.ui_url):
        r = get(c, f"{url}/health")
        assert r.status_code == 200 and r.json()["status"] == "ok", (url, r.text)
    assert run.boot_seconds < 30, f"healthy only {run.boot_seconds:.1f} s after docker run (bench: <= 8 s)"


def test_a_token_is_generated_into_the_state_volume_and_the_log_says_where(run: Run) -> None:
    c = run.container
    assert c.token and len(c.token) == 43
    assert c.exec("stat", "-c", "%a %U", TOKEN_FILE).split() == ["600", "deskpilot"]
    assert c.exec("stat", "-c", "%a %U", "/var/lib/deskpilot").split() == ["700", "deskpilot"]
    logs = c.logs()
    assert c.token not in logs
    assert f"generated one into {TOKEN_FILE}" in logs and f"docker exec <container> cat {TOKEN_FILE}" in logs
    refused = httpx.get(f"{c.ui_url}/api/tasks", timeout=30)
    assert refused.status_code == 401, refused.text[:200]
    assert get(c, f"{c.ui_url}/api/tasks").status_code == 200


def test_each_program_runs_as_its_user_with_only_its_own_variables(run: Run) -> None:
    c = run.container
    pids = {p: int(c.supervisorctl("pid", p)) for p in PROGRAMS}
    users = {p: c.exec("stat", "-c", "%U", f"/proc/{pid}").strip() for p, pid in pids.items()}
    own = {"task-api": "deskpilot", "ui": "deskpilot"} | dict.fromkeys(
        ("xvfb", "x11vnc", "desktop-api"), "deskpilot-display"
    )
    assert users == {p: own.get(p, "user") for p in PROGRAMS}
    denied = c.exec("cat", f"/proc/{pids['task-api']}/environ", user="user", check=False)
    assert denied == "", "the desktop user read the task service's environment"
    # (root in the container may not either: Docker withholds CAP_SYS_PTRACE; root on this host may)
    names = {p: set(psutil.Process(c.host_pid(pid)).environ()) for p, pid in pids.items()}
    agent_only = {"DESKPILOT_TOKEN", "AGENT_OPENAI_BASE_URL", "AGENT_MODEL"}
    assert agent_only <= names["task-api"]
    assert "DESKPILOT_TOKEN" in names["ui"] and "AGENT_MODEL" not in names["ui"]
    assert "DESKPILOT_TOKEN_SHA256" in names["desktop-api"]
    for program in set(PROGRAMS) - set(own):
        assert not agent_only & names[program], program


def test_the_desktop_user_reaches_neither_the_vnc_server_nor_the_display_side_processes(run: Run) -> None:
    """With host networking every user of the host shares the loopback: x11vnc has no TCP port, and its socket
    and the display side's processes are out of the desktop user's reach (tests/e2e/test_least_privilege.py
    proves more of it natively)."""
    c = run.container
    x11vnc = int(c.supervisorctl("pid", "x11vnc"))
    listening = [s for s in psutil.Process(c.host_pid(x11vnc)).net_connections("inet") if not s.raddr]
    assert listening == []
    rfb = json.loads(c.exec("python3", "-c", RFB, f"{RUN_DIR}/display/vnc.sock", user="user"))
    assert rfb == {"connected": False, "error": "Permission denied"}
    pids = [c.supervisorctl("pid", p).strip() for p in ("xvfb", "x11vnc", "desktop-api", "task-api")]
    seen = json.loads(c.exec("python3", "-c", REACH, *pids, user="user"))
    refused = {"signal": "EPERM", "ptrace": "EPERM", "mem": "EACCES", "environ": "EACCES"}
    assert all(r == refused for r in seen.values()), seen


def test_the_screenshot_shows_the_xfce_desktop_with_its_launchers(run: Run) -> None:
    c = run.container
    on_desktop = c.exec("sh", "-c", f"cd {HOME}/Desktop && stat -c '%n %U %A' *.desktop").splitlines()
    assert [line.split()[0] for line in on_desktop] == LAUNCHERS
    assert all(line.split()[1] == "user" and "x" in line.split()[2] for line in on_desktop), on_desktop
    classes = {line.split()[2].lower() for line in c.exec("wmctrl", "-lx", user="user").splitlines()}
    assert {"xfdesktop.xfdesktop", "xfce4-panel.xfce4-panel"} <= classes

    # The picture itself: one icon per launcher in the left column, a plain backdrop, the panel at the bottom.
    def with_every_icon() -> np.ndarray | None:
        shot = screenshot(c)
        return shot if len(icon_rows(shot)) == len(LAUNCHERS) else None

    shot = wait_for(with_every_icon, 30, f"{len(LAUNCHERS)} launcher icons")
    assert shot.shape == (1080, 1920, 3)
    backdrop = np.median(shot[100:1000, 400:1800].reshape(-1, 3), axis=0)
    assert (np.abs(shot[100:1000, 400:1800] - backdrop).sum(axis=2) > 60).mean() < 0.001
    assert np.abs(shot[1050:1080].mean(axis=(0, 1)) - backdrop).sum() > 100, "no panel at the bottom"


def test_application_browser_opens_firefox(run: Run) -> None:
    c = run.container
    r = computer(c, "application", application="browser")
    assert r.status_code == 200 and r.json() == {"success": True}, r.text[:300]
    assert active_window_class(c) == "navigator.firefox-esr"
    # Firefox keeps its content processes' shared memory in /dev/shm: the --shm-size of the run command.
    assert "1.0G" in c.exec("df", "-h", "/dev/shm")


@pytest.mark.anyio
async def test_mcp_over_sse_lists_the_tools(run: Run) -> None:
    c = run.container
    async with Client(sse_client(f"{c.desktop_url}/mcp", headers=c.headers)) as client:
        tools = (await client.list_tools()).tools
    assert {t.name for t in tools} == {f"computer_{a}" for a in ACTION_MODELS}


def test_a_task_runs_end_to_end_with_a_scripted_model(run: Run, llm: ScriptedModel) -> None:
    c = run.container
    marker = uuid.uuid4().hex

    def check_the_file(req: Request) -> Answer:
        assert req.last_tool_result_has_image(), "the model gets a screenshot after each action"
        wait_for(lambda: marker in c.exec("cat", f"{HOME}/{run.note}", check=False) or None, 30, "the file")
        return tool("set_task_status", status="completed", description=f"wrote ~/{run.note}")

    llm.play(
        [
            tool("computer_application", application="terminal"),
            tool("computer_type_text", text=f"echo {marker} > ~/{run.note}\n"),
            check_the_file,
        ]
    )
    r = httpx.post(
        f"{c.agent_url}/tasks", json={"description": "Write a note"}, headers=c.headers, timeout=30
    )
    assert r.status_code == 201, r.text
    run.task_id = r.json()["id"]

    def settled() -> dict[str, Any] | None:
        task: dict[str, Any] = get(c, f"{c.agent_url}/tasks/{run.task_id}").json()
        return task if task["status"] in ("COMPLETED", "FAILED", "NEEDS_HELP", "CANCELLED") else None

    done = wait_for(settled, 120, "the task to settle")
    assert done["status"] == "COMPLETED", (done.get("error"), llm.errors)
    assert done["model"] == f"local/{llm.model}"
    assert len(llm.requests) == 3 and not llm.errors
    assert c.exec("stat", "-c", "%U", f"{HOME}/{run.note}").strip() == "user"


# ------------------------------------------------------------------------------------------------ operations


def test_unhealthy_while_a_service_is_degraded_and_healthy_again_soon_after(run: Run) -> None:
    """No VNC server: the desktop service says so, and Docker's status follows both ways."""
    c = run.container
    c.supervisorctl("stop", "x11vnc")
    try:
        desktop = get(c, f"{c.desktop_url}/health")
        assert desktop.status_code != 200 or desktop.json()["status"] != "ok", desktop.text
        c.wait_health("unhealthy", timeout=90)  # failures count once the 60 s start period is over
    finally:
        c.supervisorctl("start", "x11vnc")
    wait_for(lambda: get(c, f"{c.desktop_url}/health").json()["status"] == "ok" or None, 30, "VNC")
    up = time.monotonic()
    c.wait_health("healthy", timeout=30)
    assert time.monotonic() - up <= 10


def test_docker_stop_stops_every_program_within_10_s(run: Run) -> None:
    c = run.container
    processes = [psutil.Process(pid) for pid in c.host_pids()]
    assert len(processes) > len(PROGRAMS)
    seconds = c.stop(timeout=10)
    state = c.inspect()["State"]
    logs = c.logs()
    assert seconds < 10 and state["ExitCode"] == 0, (seconds, state, logs[-2000:])
    for program in PROGRAMS:
        assert re.search(rf"stopped: {program} \((terminated by SIGTERM|exit status \d+)\)", logs), program
    assert "SIGKILL" not in logs, logs[-2000:]
    assert not [p for p in processes if p.is_running()], "a process of the container outlived it"


def test_a_restart_on_the_same_volumes_keeps_the_tasks_and_the_home(run: Run, image: str) -> None:
    old = run.container
    assert run.task_id, "the task test did not run"
    again = Container(image, env=old.env, volumes=old.volumes)  # with a token of its own, on loopback
    assert again.token and again.token != old.token
    run.restarted.append(again)
    again.run().wait_health("healthy", timeout=120)
    assert "DESKPILOT_TOKEN" in again.logs() and again.token not in again.logs()
    task = get(again, f"{again.agent_url}/tasks/{run.task_id}").json()
    assert task["status"] == "COMPLETED"
    assert again.exec("stat", "-c", "%U", f"{HOME}/{run.note}").strip() == "user"
    assert len(again.exec("cat", f"{HOME}/{run.note}").strip()) == 32
    assert sorted(again.exec("ls", f"{HOME}/Desktop").split()) == LAUNCHERS
    again.stop()
