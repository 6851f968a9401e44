"""POST /command: a shell command as the desktop user, with its output, exit code, time-out and limits;
bad requests are 400s. (The Guard in front of it: test_security.py.)"""

from __future__ import annotations

import os
import time

import pytest

from deskpilot.desktop.command import MAX_OUTPUT
from testbed.desktop_files import DESKTOP_USER
from tests.integration.desktop.conftest import Desktop


def run(desktop: Desktop, body: object) -> tuple[int, dict]:
    r = desktop.http.post(f"{desktop.url}/command", json=body)
    return r.status_code, r.json()


def test_a_command_runs_as_the_desktop_user_in_the_session(desktop: Desktop) -> None:
    status, out = run(desktop, {"command": 'id -un; echo "$HOME"; echo "$DISPLAY"; pwd; echo oops >&2'})
    assert status == 200, out
    user, home, display, cwd = out["stdout"].splitlines()
    expected_user = DESKTOP_USER if os.geteuid() == 0 else os.environ.get("USER", user)
    assert user == expected_user
    assert display == desktop.display.name
    assert cwd == home
    assert out["stderr"] == "oops\n"
    assert out | {"stdout": "", "stderr": "", "ms": 0} == {
        "success": True,
        "exitCode": 0,
        "stdout": "",
        "stderr": "",
        "truncated": False,
        "timedOut": False,
        "ms": 0,
    }


def test_the_exit_code_of_a_failing_command(desktop: Desktop) -> None:
    status, out = run(desktop, {"command": "exit 3"})
    assert status == 200 and out["exitCode"] == 3


def test_a_command_past_its_time_out_is_killed_with_its_children(desktop: Desktop) -> None:
    started = time.monotonic()
    status, out = run(desktop, {"command": "sleep 30 & sleep 30; echo never", "timeout": 0.5})
    assert status == 200, out
    assert out["timedOut"] is True and out["exitCode"] is None and "never" not in out["stdout"]
    assert time.monotonic() - started < 5


def test_output_beyond_the_cap_is_cut_off(desktop: Desktop) -> None:
    status, out = run(desktop, {"command": "head -c 200000 /dev/zero | tr '\\0' a"})
    assert status == 200
    assert out["truncated"] is True and out["stdout"] == "a" * MAX_OUTPUT


@pytest.mark.parametrize(
    "body",
    [
        {},
        {"command": ""},
        {"command": "true", "timeout": 500},
        {"command": "true", "timeout": 0},
        {"command": "true", "timeout": True},
        {"command": ["true"]},
        {"command": "true", "user": "root"},
        [],
    ],
)
def test_a_bad_request_is_a_400_that_runs_nothing(desktop: Desktop, body: object) -> None:
    status, out = run(desktop, body)
    assert status == 400, out
    assert out["success"] is False and out["error"].startswith("command: "), out
