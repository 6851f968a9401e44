"""Secrets out of the desktop user's reach, in the booted appliance: it runs with a token and a fake value for
every variable only the task service may see (tests/e2e/conftest.py). The desktop service's `read_file` runs
with the desktop user's rights, as does everything typed into a terminal: whatever they can read must hold
none of those values. The processes are inspected as root (psutil), which sees every environment."""

from __future__ import annotations

import base64
import hashlib
import stat
import subprocess
import time
from pathlib import Path

import httpx
import psutil
import pytest
from Xlib import display as xdisplay
from Xlib import error as xerror

from testbed.appliance import Appliance

pytestmark = pytest.mark.e2e

AGENT_USER = "deskpilot"


def secrets_of(appliance: Appliance) -> dict[str, str]:
    """name -> value of everything only the task service (and, for the token, the UI) may hold."""
    assert appliance.token
    return {"DESKPILOT_TOKEN": appliance.token, **appliance.settings}


def leaks(text: str, appliance: Appliance) -> list[str]:
    """The names of the secrets whose value appears in `text`."""
    return [name for name, value in secrets_of(appliance).items() if value in text]


def computer(appliance: Appliance, action: str, **fields: object) -> httpx.Response:
    body = {"action": action, **fields}
    return httpx.post(
        f"{appliance.desktop_url}/computer-use", json=body, headers=appliance.headers, timeout=120
    )


def read_file(appliance: Appliance, path: str | Path) -> str | None:
    """What the desktop's read_file returns (decoded), or None when it is refused."""
    r = appliance.computer("read_file", path=str(path))
    assert r.status_code < 500, r.text[:300]
    body = r.json()
    return base64.b64decode(body["data"]).decode(errors="replace") if body["success"] else None


def environ(p: psutil.Process) -> dict[str, str]:
    try:
        return p.environ()
    except (psutil.NoSuchProcess, psutil.ZombieProcess):
        return {}


def wm_classes(appliance: Appliance) -> str:
    out = subprocess.run(
        ["wmctrl", "-lx"], env=appliance.session_env, capture_output=True, text=True, timeout=10
    )
    return out.stdout.lower()


def username(p: psutil.Process) -> str:
    try:
        return p.username()
    except psutil.NoSuchProcess:  # a zombie too
        return ""


def cmdline(p: psutil.Process) -> str:
    try:
        return " ".join(p.cmdline())
    except psutil.NoSuchProcess:
        return ""


# -------------------------------------------------------------------------------------------- who runs what


def test_the_task_service_and_the_ui_run_as_their_own_user_on_a_private_state_dir(
    appliance: Appliance,
) -> None:
    runs_as = appliance.runs_as()
    assert runs_as["task-api"] == runs_as["ui"] == AGENT_USER, "the checkout must be readable by deskpilot"
    for program in ("task-api", "ui"):
        assert username(psutil.Process(appliance.pid(program))) == AGENT_USER, program
    state = appliance.state_dir.stat()
    assert stat.S_IMODE(state.st_mode) == 0o700 and appliance.state_dir.owner() == AGENT_USER
    assert (appliance.state_dir / "agent.db").owner() == AGENT_USER


def test_each_service_reads_its_environment_from_a_file_only_its_user_can_read(appliance: Appliance) -> None:
    runs_as = appliance.runs_as()
    for program in ("desktop-api", "task-api", "ui"):
        path = appliance.run_dir / "env" / program
        assert stat.S_IMODE(path.stat().st_mode) == 0o600 and path.owner() == runs_as[program], program
    assert not leaks((appliance.run_dir / "env" / "desktop-api").read_text(), appliance)
    assert stat.S_IMODE((appliance.run_dir / "env").stat().st_mode) == 0o711  # root's: no one else lists it


# ------------------------------------------------------------------------------------------------ read_file


def test_read_file_reaches_no_secret(appliance: Appliance) -> None:
    own = read_file(appliance, "/proc/self/environ")
    assert own is not None and "DESKTOP_PORT=" in own, "the desktop service reads its own environment"
    assert not leaks(own, appliance)
    targets: list[str | Path] = [
        *(f"/proc/{appliance.pid(p)}/{f}" for p in ("task-api", "ui") for f in ("environ", "mem")),
        f"/proc/{appliance.proc.pid if appliance.proc else 1}/environ",  # supervisord
        appliance.state_dir / "agent.db",
        appliance.run_dir / "env" / "task-api",
        appliance.run_dir / "env" / "ui",
    ]
    for target in targets:
        content = read_file(appliance, target)
        assert content is None or not leaks(content, appliance), target
    assert read_file(appliance, appliance.state_dir / "agent.db") is None


def test_no_secret_on_any_command_line(appliance: Appliance) -> None:
    """Every user can read every process's command line."""
    for p in appliance.processes():
        assert not leaks(cmdline(p), appliance), cmdline(p)[:200]


# --------------------------------------------------------------------------------------------- environments


def test_only_the_task_service_holds_the_keys_and_only_it_and_the_ui_the_token(appliance: Appliance) -> None:
    token = secrets_of(appliance)["DESKPILOT_TOKEN"]
    agent = environ(psutil.Process(appliance.pid("task-api")))
    assert {k: agent.get(k) for k in secrets_of(appliance)} == secrets_of(appliance)
    ui = environ(psutil.Process(appliance.pid("ui")))
    assert ui.get("DESKPILOT_TOKEN") == token and leaks(str(ui), appliance) == ["DESKPILOT_TOKEN"]
    desktop = environ(psutil.Process(appliance.pid("desktop-api")))
    # the token's digest and the desktop credential's, which the task service and the UI present instead
    token_digest, credential_digest = desktop["DESKPILOT_TOKEN_SHA256"].split(",")
    assert token_digest == hashlib.sha256(token.encode()).hexdigest()
    credential = agent["TASKS_DESKTOP_TOKEN"]
    assert credential != token and ui["UI_DESKTOP_TOKEN"] == credential
    assert credential_digest == hashlib.sha256(credential.encode()).hexdigest()
    assert "DESKPILOT_TOKEN" not in desktop


def test_no_process_of_the_desktop_side_holds_a_secret(appliance: Appliance) -> None:
    """The session, x11vnc, Xvfb, the desktop service, and an application it starts: none has a key or the
    token, nor any variable of the task service's."""
    # the geany the launcher test started on this display, if any (a child of the test, not of the appliance):
    # the service starts its own
    for p in psutil.process_iter():
        if "geany" in cmdline(p) and environ(p).get("DISPLAY") == appliance.display:
            p.kill()
            p.wait(10)
    deadline = time.monotonic() + 10
    while "geany.geany" in wm_classes(appliance):
        assert time.monotonic() < deadline, "the killed editor's window stayed"
        time.sleep(0.1)
    r = appliance.computer("application", application="code_editor")
    assert r.status_code == 200, r.text[:300]
    hands = psutil.Process(appliance.pid("hands"))  # the desktop user's worker starts the programs
    (editor,) = [p for p in hands.children() if "geany" in cmdline(p)]
    app_env = environ(editor)
    assert app_env["XAUTHORITY"] and not [k for k in app_env if k.startswith("DESKPILOT_")]

    agent_only = set(secrets_of(appliance)) | {"DATABASE_URL", "TASKS_DATABASE_URL"}
    checked = set()
    for p in appliance.processes():
        if username(p) in ("", AGENT_USER):
            continue
        env, name = environ(p), cmdline(p)[:80]
        checked.add(Path(cmdline(p).split(" ")[0]).name)
        assert not leaks(str(env), appliance), (name, leaks(str(env), appliance))
        assert not agent_only & set(env), (name, agent_only & set(env))
    assert {"Xvfb", "x11vnc", "xfwm4", "xfdesktop", "xfce4-panel", "dbus-daemon", "geany"} <= checked, checked


def test_no_secret_in_the_log(appliance: Appliance) -> None:
    assert not leaks(appliance.log.read_text(errors="replace"), appliance)


# ------------------------------------------------------------------------------------------------ the display


def test_x_clients_without_the_cookie_are_refused(
    appliance: Appliance, monkeypatch: pytest.MonkeyPatch
) -> None:
    xauthority = Path(appliance.session_env["XAUTHORITY"])
    assert stat.S_IMODE(xauthority.stat().st_mode) == 0o600 and xauthority.owner() == "user"
    number = appliance.display.lstrip(":")
    assert f"@/tmp/.X11-unix/X{number}\n" not in Path("/proc/net/unix").read_text(), "an abstract socket"

    env = {**appliance.session_env}
    ok = subprocess.run(["xdpyinfo"], env=env, capture_output=True, text=True)
    assert ok.returncode == 0, ok.stderr
    for user in ("nobody", AGENT_USER):  # another user; the services' user, which cannot read the cookie
        argv = ["env", f"XAUTHORITY={xauthority}", "xdpyinfo", "-display", appliance.display]
        refused = subprocess.run(["runuser", "-u", user, "--", *argv], capture_output=True, text=True)
        assert refused.returncode != 0 and "Authorization required" in refused.stderr, (user, refused.stderr)
    no_cookie = {**env, "XAUTHORITY": "/nonexistent"}
    refused = subprocess.run(["xdpyinfo"], env=no_cookie, capture_output=True, text=True)
    assert refused.returncode != 0 and "Authorization required" in refused.stderr, refused.stderr
    monkeypatch.setenv("XAUTHORITY", "/nonexistent")  # python-xlib, as the desktop service connects
    with pytest.raises(xerror.DisplayConnectionError, match="Authorization required"):
        xdisplay.Display(appliance.display)
    # and the desktop service, which has the cookie, drives the display
    deadline = time.monotonic() + 10
    while (r := appliance.computer("cursor_position")).status_code != 200 and time.monotonic() < deadline:
        time.sleep(0.2)
    assert r.status_code == 200, r.text[:300]
