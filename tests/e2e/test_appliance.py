"""The whole appliance, booted natively from supervisord.conf and rootfs/, used as a user and an operator do.


Order matters: the `application` action starts every app, the Xvfb-kill test takes the display and those apps
down and checks recovery, and the launcher test then starts every app afresh from its Desktop icon.
"""

from __future__ import annotations

import base64
import configparser
import contextlib
import io
import os
import re
import shlex
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import numpy as np
import psutil
import pytest
from PIL import Image
from playwright.sync_api import Page, sync_playwright

from testbed import ROOT
from testbed.appliance import PROGRAMS, Appliance
from testbed.browser import launch_chromium

pytestmark = pytest.mark.e2e

# identifier -> the window class its application maps (WM_CLASS instance.class, compared case-insensitively)
WINDOW_CLASSES = {
    "browser": "navigator.firefox-esr",
    "password_manager": "keepassxc.keepassxc",
    "email_client": "mail.thunderbird",
    "code_editor": "geany.geany",
    "terminal": "xfce4-terminal.xfce4-terminal",
    "directory": "thunar.thunar",
}
LAUNCHERS = sorted((ROOT / "rootfs" / "home" / "user" / "Desktop").glob("*.desktop"))


@contextlib.contextmanager
def live_view(appliance: Appliance, query: str = "") -> Iterator[Page]:
    """/vnc in headless Debian Chromium, connected; uncaught JavaScript errors fail the test. With a token, as
    a browser reaches it: through the UI, logged in (the UI adds the token to what it forwards)."""
    with sync_playwright() as pw:
        browser = launch_chromium(pw)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 800})
            errors: list[str] = []
            page.on("pageerror", lambda e: errors.append(str(e)))
            if appliance.token:
                page.goto(f"{appliance.ui_url}/login")
                page.fill("#token", appliance.token)
                page.click("#login button")
                page.wait_for_url(f"{appliance.ui_url}/")
            page.goto(f"{appliance.ui_url if appliance.token else appliance.desktop_url}/vnc{query}")
            connected = "document.documentElement.classList.contains('noVNC_connected')"
            page.wait_for_function(connected, timeout=20000)
            yield page
            assert not errors, errors
        finally:
            browser.close()


def screenshot(appliance: Appliance) -> Image.Image:
    """The desktop service's own screenshot (the API's contract), as an RGB image."""
    r = appliance.computer("screenshot")
    assert r.status_code == 200, r.text[:300]
    body = r.json()
    assert body["success"] is True
    return Image.open(io.BytesIO(base64.b64decode(body["data"]["image"]))).convert("RGB")


def windows(appliance: Appliance) -> list[str]:
    """`wmctrl -lx` lines: id, desktop, WM_CLASS (instance.class), host, title."""
    env = appliance.session_env
    out = subprocess.run(["wmctrl", "-lx"], env=env, capture_output=True, text=True, timeout=10)
    return out.stdout.splitlines()


def wait_for_window(appliance: Appliance, wm_class: str, timeout: float = 60) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for line in windows(appliance):
            fields = line.split(None, 4)
            if len(fields) > 2 and fields[2].lower().startswith(wm_class):
                return line
        time.sleep(0.25)
    raise AssertionError(f"no window of class {wm_class} after {timeout} s; windows: {windows(appliance)}")


def as_desktop_user(appliance: Appliance, argv: list[str]) -> subprocess.Popen:
    """Run a program in the appliance's desktop session, as the desktop user, the way xfdesktop would."""
    keys: tuple[str, ...] = (
        "DISPLAY",
        "XAUTHORITY",
        "HOME",
        "XDG_RUNTIME_DIR",
        "TMPDIR",
        "DBUS_SESSION_BUS_ADDRESS",
    )
    keys += ("NO_AT_BRIDGE",)
    env = [f"{k}={appliance.session_env[k]}" for k in keys]
    return subprocess.Popen(
        ["runuser", "-u", "user", "--", "env", "-C", str(appliance.home), *env, *argv],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


# ------------------------------------------------------------------------------------------------ boot


def test_boot_brings_every_program_up_as_its_user(appliance: Appliance) -> None:
    deadline = time.monotonic() + 20  # a program is RUNNING once it has stayed up for a second
    while {p: (status := appliance.status()).get(p) for p in PROGRAMS} != dict.fromkeys(PROGRAMS, "RUNNING"):
        assert time.monotonic() < deadline, f"{status}\n{appliance.log_tail()}"
        time.sleep(0.2)
    # The session and its worker run as `user`; the desktop service, Xvfb (for its MIT-SHM) and x11vnc as the
    # display's owner; the task service and the UI as `deskpilot`; a user that cannot read the checkout is
    # replaced by root (tests/integration/test_launcher.py).
    runs_as = appliance.runs_as()
    services = {"task-api": "deskpilot", "ui": "deskpilot", "hands": "user"} | dict.fromkeys(
        ("desktop-api", "xvfb", "x11vnc"), "deskpilot-display"
    )
    for program in PROGRAMS:
        user = services.get(program)
        expected = "root" if user and not _readable_by(user, ROOT) else user or "user"
        assert runs_as[program] == expected, program
        assert psutil.Process(appliance.pid(program)).username() == expected, program
    # Green /health comes first; the display and x11vnc may need a moment more (the services do not wait).
    deadline = time.monotonic() + 30
    health = f"{appliance.desktop_url}/health"
    while (desktop := httpx.get(health, headers=appliance.headers).json())["status"] != "ok":
        assert time.monotonic() < deadline, desktop
        time.sleep(0.2)
    assert desktop["display"] is True and desktop["vnc"] is True and desktop["accessibility"] is True
    for url in appliance.health_urls:
        assert httpx.get(url).json()["status"] == "ok", url
    assert appliance.boot_seconds < 30


def test_a_fresh_home_gets_the_home_layout(appliance: Appliance) -> None:
    # The fixture's home starts empty, as a new Kubernetes volume does: appliance.sh lays it out.
    for name in ("Desktop", "Documents", "Downloads"):
        path = appliance.home / name
        assert path.is_dir() and path.owner() == "user", path
    assert appliance.home.owner() == "user"


def _readable_by(user: str, path: Path) -> bool:
    probe = ["runuser", "-u", user, "--", "test", "-r", str(path / "deskpilot" / "__init__.py")]
    return subprocess.run(probe).returncode == 0


def test_no_screen_saver_or_power_saving_blanks_the_display(appliance: Appliance) -> None:
    env = appliance.session_env
    out = subprocess.run(["xset", "q"], env=env, capture_output=True, text=True).stdout
    assert re.search(r"timeout:\s+0\b", out), out
    assert "DPMS is Disabled" in out or "does not have the DPMS" in out, out


def test_desktop_shows_the_launchers_and_the_panel(appliance: Appliance) -> None:
    on_desktop = sorted((appliance.home / "Desktop").glob("*.desktop"))
    assert [p.name for p in on_desktop] == [p.name for p in LAUNCHERS]
    for p in on_desktop:
        assert os.access(p, os.X_OK), f"{p.name} must be executable to be a trusted launcher"
        assert p.owner() == "user"
    classes = {line.split(None, 4)[2].lower() for line in windows(appliance)}
    assert {"xfdesktop.xfdesktop", "xfce4-panel.xfce4-panel"} <= classes


# ------------------------------------------------------------------------------------------------ live view


def test_live_view_canvas_shows_the_desktop(appliance: Appliance) -> None:
    with live_view(appliance) as page:
        assert "view_only=true" in page.url
        page.wait_for_function(
            "(() => { const c = document.querySelector('#noVNC_container canvas');"
            " return c && c.width === 1920 && c.height === 1080; })()",
            timeout=10000,
        )
        # Icons and wallpaper only (the panel clock changes). The view is JPEG-encoded, so compare 8x8
        # block means, which JPEG keeps: the same region must match, the region 240 px right must not.
        box = (0, 0, 480, 720)
        deadline = time.monotonic() + 15
        while True:
            canvas = _blocks(_canvas_region(page, box))
            shot = screenshot(appliance)
            same = np.abs(canvas - _blocks(np.asarray(shot.crop(box)))).mean()
            if same < 2 or time.monotonic() > deadline:
                break
            time.sleep(0.5)
    shifted = np.abs(canvas - _blocks(np.asarray(shot.crop((240, 0, 720, 720))))).mean()
    assert same < 2, f"noVNC canvas differs from the screenshot by {same:.1f} per channel (8x8 means)"
    assert shifted > 4 * max(same, 1), f"the comparison cannot tell regions apart ({shifted:.1f})"


def cursor(appliance: Appliance) -> tuple[int, int]:
    data = appliance.computer("cursor_position").json()["data"]
    return round(data["x"]), round(data["y"])


@pytest.mark.parametrize("interactive", [False, True], ids=["view-only", "interactive"])
def test_live_view_moves_the_pointer_only_when_interactive(appliance: Appliance, interactive: bool) -> None:
    appliance.computer("move_mouse", coordinates={"x": 1500, "y": 900})
    with live_view(appliance, "?interactive=1" if interactive else "") as page:
        box = page.locator("#noVNC_container canvas").bounding_box()
        assert box and box["width"] > 100
        # Point at the remote (480, 270): a quarter of the way into the scaled canvas.
        target = (box["x"] + box["width"] / 4, box["y"] + box["height"] / 4)
        for dx in (0, 3, 0):  # a few motion events, as a real hand makes
            page.mouse.move(target[0] + dx, target[1])
            time.sleep(0.2)
        deadline = time.monotonic() + 5
        while interactive and cursor(appliance) == (1500, 900) and time.monotonic() < deadline:
            time.sleep(0.2)
        x, y = cursor(appliance)
    if interactive:
        assert abs(x - 480) <= 4 and abs(y - 270) <= 4, (x, y)
    else:
        assert (x, y) == (1500, 900), "a view-only live view moved the pointer"


def _blocks(rgb: np.ndarray, n: int = 8) -> np.ndarray:
    h, w, _ = rgb.shape
    return rgb[: h - h % n, : w - w % n].reshape(h // n, n, w // n, n, 3).astype(np.float32).mean(axis=(1, 3))


def _canvas_region(page, box: tuple[int, int, int, int]) -> np.ndarray:
    x, y, right, bottom = box
    data_url = page.evaluate(
        """([x, y, w, h]) => {
            const src = document.querySelector('#noVNC_container canvas');
            const out = document.createElement('canvas');
            out.width = w; out.height = h;
            out.getContext('2d').drawImage(src, x, y, w, h, 0, 0, w, h);
            return out.toDataURL('image/png');
        }""",
        [x, y, right - x, bottom - y],
    )
    png = base64.b64decode(data_url.split(",", 1)[1])
    return np.asarray(Image.open(io.BytesIO(png)).convert("RGB"))


# ------------------------------------------------------------------------------------------------ apps


def test_application_action_opens_and_focuses_each_real_application(appliance: Appliance) -> None:
    """`POST /computer-use {"action": "application"}` starts each program as the desktop user, focused."""
    for identifier, wm_class in WINDOW_CLASSES.items():
        r = appliance.computer("application", application=identifier)
        assert r.status_code == 200 and r.json() == {"success": True}, f"{identifier}: {r.text[:300]}"
        active = _active_window_class(appliance)
        assert active.startswith(wm_class), f"{identifier}: the active window is {active}"
    r = appliance.computer("application", application="desktop")
    assert r.status_code == 200 and r.json() == {"success": True}


def _active_window_class(appliance: Appliance) -> str:
    env = appliance.session_env
    root = subprocess.run(["xprop", "-root", "_NET_ACTIVE_WINDOW"], env=env, capture_output=True, text=True)
    # _NET_ACTIVE_WINDOW(WINDOW): window id # 0x1600003, 0x0   (xfwm4 appends a second value)
    window = root.stdout.split("#", 1)[-1].split(",")[0].strip()
    out = subprocess.run(["xprop", "-id", window, "WM_CLASS"], env=env, capture_output=True, text=True).stdout
    # WM_CLASS(STRING) = "Navigator", "firefox-esr"
    return ".".join(part.strip().strip('"') for part in out.split("=", 1)[-1].split(",")).lower()


# ------------------------------------------------------------------------------------------------ recovery


def _display_answers(appliance: Appliance) -> bool:
    env = appliance.session_env
    return subprocess.run(["xset", "q"], env=env, capture_output=True).returncode == 0


def test_killed_display_comes_back_and_the_desktop_service_recovers_without_restarting(
    appliance: Appliance,
) -> None:
    api_pid = appliance.pid("desktop-api")
    screenshot(appliance)  # connected before the crash

    # 1. A crash: supervisord restarts Xvfb and everything that lost its display.
    old_xvfb = appliance.pid("xvfb")
    os.kill(old_xvfb, signal.SIGKILL)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        status = appliance.status()
        restarted = all(status.get(p) == "RUNNING" for p in PROGRAMS) and appliance.pid("xvfb") != old_xvfb
        if restarted and _display_answers(appliance):
            break
        time.sleep(0.2)
    assert _display_answers(appliance), appliance.log_tail()
    assert appliance.pid("xvfb") != old_xvfb
    wait_for_window(appliance, "xfdesktop.xfdesktop", timeout=20)

    # 2. While the display is down (held down here so the check is not a race), the API answers 503.
    appliance.ctl("stop", "xvfb")
    r = appliance.computer("screenshot")
    assert r.status_code == 503, r.text[:300]
    assert r.json()["success"] is False and r.json()["error"]
    appliance.ctl("start", "xvfb")

    # 3. It recovers by itself: same process, working screenshots again.
    deadline = time.monotonic() + 30
    while True:
        r = appliance.computer("screenshot")
        if r.status_code == 200 or time.monotonic() > deadline:
            break
        time.sleep(0.25)
    assert r.status_code == 200, r.text[:300]
    assert screenshot(appliance).size == (1920, 1080)
    assert appliance.pid("desktop-api") == api_pid, "the desktop service restarted instead of reconnecting"


# ------------------------------------------------------------------------------------------------ launchers
# After the recovery test: the display restart closed every application, so each launcher starts a fresh one.


def _exec_argv(launcher: Path) -> list[str]:
    entry = configparser.ConfigParser(interpolation=None)
    entry.read(launcher)
    return [a for a in shlex.split(entry["Desktop Entry"]["Exec"]) if not a.startswith("%")]


def test_every_launcher_opens_its_real_application(appliance: Appliance) -> None:
    """Each .desktop file on the Desktop, launched as xfdesktop launches it, maps its application's window."""
    assert {p.stem for p in LAUNCHERS} == set(WINDOW_CLASSES)
    started = time.monotonic()
    desktop = appliance.home / "Desktop"
    launchers = [as_desktop_user(appliance, ["gio", "launch", str(desktop / p.name)]) for p in LAUNCHERS]
    for p in LAUNCHERS:
        wait_for_window(appliance, WINDOW_CLASSES[p.stem], timeout=max(10, 90 - (time.monotonic() - started)))
    for proc in launchers:
        proc.wait(10)
    # Each application runs as the desktop user, under the command its launcher names (Thunar's window may
    # belong to the `Thunar --gapplication-service` instance xfdesktop already activated over D-Bus).
    commands = set()
    for proc in psutil.process_iter(["username", "cmdline"]):
        if proc.info["username"] == "user" and proc.info["cmdline"]:
            commands.add(" ".join(proc.info["cmdline"]).lower())
    for p in LAUNCHERS:
        program = _exec_argv(p)[0]
        assert any(program.lower() in c for c in commands), f"{p.stem}: no process running {program}"
