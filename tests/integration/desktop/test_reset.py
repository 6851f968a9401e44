"""POST /reset on a display and home of its own: input released, every application window closed (those
``application`` started and those it did not), the home back to the skeleton, in well under a second; and
the Guard in front of it like every other route (token, Host, Origin)."""

from __future__ import annotations

import filecmp
import os
import pwd
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from deskpilot.config import DesktopSettings
from deskpilot.desktop.home import HOME_DIRS
from deskpilot.desktop.reset import X_TIMEOUT_S, default_skeleton
from testbed.desktop_files import private_files_dir
from testbed.security import BEARER, with_digest
from testbed.xvfb import Display, managed_display
from tests.integration.desktop.conftest import PROBE, Desktop, XReader, serve

SKELETON = default_skeleton()


@pytest.fixture(scope="module")
def home() -> Iterator[Path]:
    with private_files_dir() as path:
        path.chmod(0o755)
        yield path


@pytest.fixture(scope="module")
def reset_display() -> Iterator[Display]:
    with managed_display() as d:
        yield d


@pytest.fixture(scope="module")
def guarded(reset_display: Display, home: Path) -> Iterator[Desktop]:
    with serve(reset_display, with_digest(), home=home, files_dir=home / "Desktop") as desktop:
        yield desktop


def reset(desktop: Desktop, **headers: str) -> dict:
    r = desktop.http.post(f"{desktop.url}/reset", json={}, headers=headers)
    return {"status": r.status_code, **r.json()}


def make_a_mess(desktop: Desktop, home: Path, tmp_path: Path) -> list[subprocess.Popen]:
    """A window ``application`` opened, one it did not, a key held down, and files the skeleton lacks."""
    act = {"action": "application", "application": "terminal"}
    assert desktop.http.post(f"{desktop.url}/computer-use", json=act, headers=BEARER).status_code == 200
    probe = desktop.display.spawn(
        [sys.executable, str(PROBE), str(tmp_path / "probe.json"), "reset-probe", "300x200+10+10", "white"]
    )
    held = {"action": "press_keys", "keys": ["shift"], "press": "down"}
    assert desktop.http.post(f"{desktop.url}/computer-use", json=held, headers=BEARER).status_code == 200
    outside = tmp_path / "outside.txt"
    outside.write_text("not the home's")
    for rel, data in {"Desktop/notes.txt": "x", "Documents/a/b.txt": "y", ".cache/app/c": "z"}.items():
        (home / rel).parent.mkdir(parents=True, exist_ok=True)
        (home / rel).write_text(data)
    (home / "Desktop" / "terminal.desktop").write_text("changed")
    (home / "link").symlink_to(outside)
    give_to_the_user(home)
    deadline = time.monotonic() + 30
    while len(app_windows(desktop.x)) < 2:
        assert time.monotonic() < deadline, "the windows did not appear"
        time.sleep(0.05)
    return [probe]


def give_to_the_user(home: Path) -> None:
    """What the test wrote in the home becomes the desktop user's, as the user's own files are."""
    if os.geteuid() == 0:
        user = pwd.getpwnam(DesktopSettings().user)
        for path in [home, *home.rglob("*")]:
            os.chown(path, user.pw_uid, user.pw_gid, follow_symlinks=False)


def app_windows(x: XReader) -> list[int]:
    return [w for w in x.windows() if x.wm_class(w)[1] in ("Xfce4-terminal", "Deskpilotprobe")]


def assert_skeleton(home: Path) -> None:
    want = {p.relative_to(SKELETON) for p in SKELETON.rglob("*")} | {Path(d) for d in HOME_DIRS}
    have = {p.relative_to(home) for p in home.rglob("*")}
    assert have == want
    for rel in want:
        if (SKELETON / rel).is_file():
            assert filecmp.cmp(SKELETON / rel, home / rel, shallow=False), rel


def test_a_reset_closes_every_application_and_brings_the_home_back(
    guarded: Desktop, home: Path, tmp_path: Path
) -> None:
    reset(guarded, **BEARER)
    probes = make_a_mess(guarded, home, tmp_path)
    started = time.perf_counter()
    body = reset(guarded, **BEARER)
    elapsed = time.perf_counter() - started
    assert body["status"] == 200 and body["success"] is True, body
    assert body["closed"] == 2 and body["removed"] >= 4, body
    assert elapsed < 1.0, f"reset took {elapsed:.2f} s"
    assert app_windows(guarded.x) == []
    assert probes[0].wait(5) is not None
    assert not guarded.controller.launched()
    assert_skeleton(home)
    assert (tmp_path / "outside.txt").read_text() == "not the home's"  # a link is deleted, not followed
    assert not guarded.x.keys_down(), "shift is still held"


def test_a_reset_of_a_clean_desktop_changes_nothing(guarded: Desktop, home: Path) -> None:
    reset(guarded, **BEARER)
    body = reset(guarded, **BEARER)
    assert body["closed"] == 0 and body["removed"] == 0, body
    assert_skeleton(home)


@pytest.mark.parametrize(
    ("headers", "status", "fragment"),
    [
        ({}, 401, "Authorization: Bearer"),
        ({"Authorization": "Bearer wrong"}, 401, "Authorization: Bearer"),
        ({**BEARER, "Host": "attacker.example"}, 400, "Host 'attacker.example' is not allowed"),
        ({**BEARER, "Origin": "http://evil.example"}, 403, "origin 'http://evil.example'"),
    ],
    ids=["no token", "wrong token", "foreign host", "foreign origin"],
)
def test_a_refused_reset_changes_nothing(
    guarded: Desktop, home: Path, headers: dict[str, str], status: int, fragment: str
) -> None:
    reset(guarded, **BEARER)
    (home / "Documents" / "keep.txt").write_text("kept")
    give_to_the_user(home)
    body = reset(guarded, **headers)
    assert body["status"] == status and fragment in body["error"], body
    assert (home / "Documents" / "keep.txt").read_text() == "kept"
    os.unlink(home / "Documents" / "keep.txt")


def test_a_display_that_stops_answering_fails_the_reset_in_bounded_time(guarded: Desktop) -> None:
    """Xvfb stopped (SIGSTOP) with the connection open: the reset's X calls are cut at their bound, a 504
    says so, and once the server answers again the next reset works on a new connection."""
    assert reset(guarded, **BEARER)["status"] == 200  # the input connection is open
    stale = guarded.controller.connections._input.peek()
    xvfb = guarded.display.xvfb.pid
    guarded.controller.reset.x_timeout = 0.5
    os.kill(xvfb, signal.SIGSTOP)
    try:
        started = time.monotonic()
        body = reset(guarded, **BEARER)
        took = time.monotonic() - started
    finally:
        os.kill(xvfb, signal.SIGCONT)
        guarded.controller.reset.x_timeout = X_TIMEOUT_S
    assert body["status"] == 504 and "did not answer during the reset within 0.5 s" in body["error"], body
    assert took < 2.5, f"the reset took {took:.2f} s"
    assert reset(guarded, **BEARER)["status"] == 200
    assert guarded.controller.connections._input.peek() is not stale
