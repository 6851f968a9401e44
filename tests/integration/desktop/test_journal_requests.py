"""POST /command and POST /reset are in the journal, over real HTTP: who sent them, the command's text, exit
code and time but never its output, the reset with what it closed and removed; failures with their status,
refused requests not at all. (On a display and home of their own: a reset closes every window.)"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from testbed.desktop_files import private_files_dir
from testbed.xvfb import Display, managed_display
from tests.integration.desktop.conftest import Desktop, serve

AGENT = {"X-Deskpilot-Actor": "agent", "X-Deskpilot-Task": "task-42"}


@pytest.fixture(scope="module")
def own_display() -> Iterator[Display]:
    with managed_display() as d:
        yield d


@pytest.fixture(scope="module")
def home() -> Iterator[Path]:
    with private_files_dir() as path:
        path.chmod(0o755)
        yield path


@pytest.fixture(scope="module")
def served(own_display: Display, home: Path) -> Iterator[Desktop]:
    with serve(own_display, home=home, files_dir=home / "Desktop") as desktop:
        yield desktop


def latest(desktop: Desktop) -> int:
    return int(desktop.http.get(f"{desktop.url}/journal", params={"limit": 1}).json()["latest"])


def entries(desktop: Desktop, since: int) -> list[dict[str, Any]]:
    r = desktop.http.get(f"{desktop.url}/journal", params={"since": since})
    assert r.status_code == 200, r.text
    return list(r.json()["entries"])


def command(desktop: Desktop, body: object, **headers: str) -> tuple[int, dict[str, Any]]:
    r = desktop.http.post(f"{desktop.url}/command", json=body, headers=headers)
    return r.status_code, r.json()


def test_a_command_is_recorded_with_its_exit_code_and_time_not_its_output(served: Desktop) -> None:
    since = latest(served)
    text = "printf '%s-%s' secret output; printf 'on-%s' stderr >&2; exit 3"
    status, out = command(served, {"command": text, "timeout": 10}, **AGENT)
    assert status == 200 and out["stdout"] == "secret-output" and out["exitCode"] == 3, out
    [entry] = entries(served, since)
    assert entry | {"time": "", "seq": 0} == {
        "seq": 0,
        "time": "",
        "actor": "agent",
        "task": "task-42",
        "action": {"action": "command", "command": text, "timeout": 10.0},
        "outcome": {"ok": True, "exitCode": 3, "timedOut": False, "ms": out["ms"]},
        "input": False,
        "frameAfter": None,
    }
    journal = json.dumps(served.http.get(f"{served.url}/journal").json())
    assert "secret-output" not in journal and "on-stderr" not in journal


def test_a_command_killed_at_its_time_out_is_recorded_so(served: Desktop) -> None:
    since = latest(served)
    status, out = command(served, {"command": "sleep 30", "timeout": 0.2})
    assert status == 200 and out["timedOut"] is True
    [entry] = entries(served, since)
    assert entry["actor"] == "api" and entry["task"] is None
    assert entry["outcome"] == {"ok": True, "exitCode": None, "timedOut": True, "ms": out["ms"]}


def test_a_refused_command_is_not_recorded(served: Desktop) -> None:
    since = latest(served)
    assert command(served, {"command": ""})[0] == 400
    assert command(served, {"command": "true"}, **{"X-Deskpilot-Actor": "human"})[0] == 400
    assert entries(served, since) == []


def test_a_reset_is_recorded_with_what_it_closed_and_removed(served: Desktop) -> None:
    left = {"action": "write_file", "path": "~/Documents/left-over.txt", "data": "eA=="}
    assert served.post(**left).status_code == 200  # the skeleton lacks it: the reset removes it
    since = latest(served)
    r = served.http.post(f"{served.url}/reset", json={}, headers=AGENT)
    assert r.status_code == 200, r.text
    report = r.json()
    assert report["removed"] >= 1
    [entry] = entries(served, since)
    assert entry["actor"] == "agent" and entry["task"] == "task-42" and entry["input"] is False
    assert entry["action"] == {"action": "reset"}
    assert entry["outcome"] == {
        "ok": True,
        "closed": report["closed"],
        "removed": report["removed"],
        "ms": report["ms"],
    }


def test_a_failed_reset_is_recorded_with_its_status(own_display: Display, home: Path, tmp_path: Path) -> None:
    missing = tmp_path / "no-skeleton"
    with serve(own_display, home=home, files_dir=home / "Desktop", skeleton=missing) as desktop:
        r = desktop.http.post(f"{desktop.url}/reset", json={})
        assert r.status_code == 404, r.text
        [entry] = entries(desktop, 0)
    assert entry["action"] == {"action": "reset"} and entry["actor"] == "api"
    assert entry["outcome"] == {"ok": False, "status": 404, "error": r.json()["error"]}
