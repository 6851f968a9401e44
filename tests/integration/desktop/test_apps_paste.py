"""application switching with the real Debian programs, and paste_text into a terminal and an editor."""

from __future__ import annotations

import os
import pwd
import subprocess
import uuid
from pathlib import Path

import psutil
import pytest

from deskpilot.desktop.apps import APPLICATIONS, matches
from tests.integration.desktop.conftest import Desktop, stop_process, wait_for


def _active_is(desktop: Desktop, identifier: str) -> bool:
    return matches(APPLICATIONS[identifier], desktop.x.wm_class(desktop.x.active_window()))


def _switch(desktop: Desktop, identifier: str) -> None:
    desktop.act(action="application", application=identifier)
    assert _active_is(desktop, identifier), desktop.x.wm_class(desktop.x.active_window())


def _runs_as_desktop_user(desktop: Desktop, identifier: str) -> None:
    pid = desktop.controller.launched()[identifier]
    if os.geteuid() == 0:
        assert psutil.Process(pid).uids().real == pwd.getpwnam(desktop.controller.settings.user).pw_uid


def test_started_programs_live_in_the_configured_home(desktop: Desktop, desktop_home: Path) -> None:
    if os.geteuid() != 0:
        pytest.skip("as root the service starts programs as the desktop user, in DESKTOP_HOME")
    _switch(desktop, "terminal")
    process = psutil.Process(desktop.controller.launched()["terminal"])
    assert process.environ()["HOME"] == str(desktop_home) and process.cwd() == str(desktop_home)


def test_application_launches_activates_and_shows_the_desktop(desktop: Desktop) -> None:
    for identifier in ("terminal", "code_editor", "directory"):
        _switch(desktop, identifier)
        _runs_as_desktop_user(desktop, identifier)
    pids = desktop.controller.launched()
    _switch(desktop, "terminal")  # already running: activated, not launched again
    assert desktop.controller.launched()["terminal"] == pids["terminal"]
    desktop.act(action="application", application="desktop")
    assert desktop.x.prop("_NET_SHOWING_DESKTOP", 6) == [1]  # 6 = CARDINAL
    _switch(desktop, "code_editor")


@pytest.mark.slow
@pytest.mark.parametrize("identifier", ["browser", "password_manager", "email_client"])
def test_application_starts_the_heavy_programs(desktop: Desktop, identifier: str) -> None:
    try:
        _switch(desktop, identifier)
        _runs_as_desktop_user(desktop, identifier)
    finally:  # stopped at once: their late pop-ups would steal the focus from the tests that follow
        proc = desktop.controller.launched().get(identifier)
        if proc is not None:
            stop_process(proc)


def test_paste_text_arrives_in_a_terminal(desktop: Desktop) -> None:
    _switch(desktop, "terminal")
    out = Path(f"/tmp/deskpilot-paste-{uuid.uuid4().hex[:8]}")
    try:
        line = f"echo 'pasté 美 ok' > {out}"
        desktop.act(action="paste_text", text=line)
        desktop.act(action="type_keys", keys=["Return"])
        wait_for(lambda: out.exists() and out.read_text() == "pasté 美 ok\n", 15, "the terminal's output")
    finally:
        out.unlink(missing_ok=True)


def test_paste_text_arrives_in_an_editor(desktop: Desktop, tmp_path: Path) -> None:
    target = tmp_path / "pasted.txt"
    home = tmp_path / "home"
    home.mkdir()
    geany = subprocess.Popen(
        ["geany", "-i", "-c", str(home / "geany"), str(target)],
        env={**desktop.display.env, "HOME": str(home), "NO_AT_BRIDGE": "1"},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:

        def geany_window() -> int:
            return next(
                (
                    w
                    for w in desktop.x.windows()
                    if desktop.x.wm_class(w)[1] == "Geany"
                    and psutil.pid_exists(geany.pid)
                    and "pasted.txt" in desktop.x.title(w)
                ),
                0,
            )

        wid = wait_for(geany_window, 20, "geany's window")
        x, y, w, h = desktop.x.geometry(wid)
        desktop.act(
            action="click_mouse", coordinates={"x": x + w // 2, "y": y + h // 2}, button="left", clickCount=1
        )
        wait_for(lambda: desktop.x.active_window() == wid, 10, "geany focused")
        text = "pasted into geany: ünïcödé 美\nsecond line"
        desktop.act(action="paste_text", text=text)
        desktop.act(action="press_keys", keys=["ctrl", "s"], press="down")
        desktop.act(action="press_keys", keys=["ctrl", "s"], press="up")
        wait_for(
            lambda: target.exists() and target.read_text().rstrip("\n") == text, 15, "geany saved the paste"
        )
    finally:
        stop_process(geany)
