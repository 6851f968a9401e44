"""The frame the agent is shown is the screen that is: in the appliance's real applications (xfce4-terminal,
Geany, Thunar), idle and beside two busy loops, the frame an action answers with (with exactly the fields the
agent sends) equals the screen once it has rested, and the evidence says what happened. These tests judge
truth, never timing.
"""

from __future__ import annotations

import base64
import io
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
from PIL import Image
from Xlib import X
from Xlib import display as xdisplay

from deskpilot.agent.computer import Computer
from deskpilot.computer.client import Desktop
from deskpilot.computer.geometry import SCREEN, clock
from deskpilot.config import AgentSettings
from testbed.appliance import Appliance
from testbed.rest import rested as screen_at_rest

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

AGENT: dict[str, Any] = Computer(None, AgentSettings()).observe  # type: ignore[arg-type]  # only its fields
WIDTH = AGENT["screenshot"]["width"]
BUSY_S = 240  # a busy loop's own bound, should the test die before it stops them


@pytest.fixture
def desktop(appliance: Appliance) -> Iterator[Desktop]:
    with Desktop(appliance.desktop_url, appliance.token) as d:
        d.reset()  # a desktop as it starts: the first window of a kind is where capture once went wrong
        yield d
        d.reset()  # the other e2e tests find the desktop as it started


@pytest.fixture
def server(appliance: Appliance, monkeypatch: pytest.MonkeyPatch) -> Iterator[xdisplay.Display]:
    """The test's own connection to the appliance's X server: the screen as the server has it."""
    monkeypatch.setenv("XAUTHORITY", appliance.session_env["XAUTHORITY"])
    d = xdisplay.Display(appliance.display)
    yield d
    d.close()


def the_servers(server: xdisplay.Display) -> np.ndarray:
    """The whole screen read from the X server itself (GetImage), as RGB, clock blanked."""
    image = server.screen().root.get_image(0, 0, SCREEN.width, SCREEN.height, X.ZPixmap, 0xFFFFFFFF)
    bgrx = np.frombuffer(image.data, np.uint8).reshape(SCREEN.height, SCREEN.width, 4)
    return blank_clock(bgrx[:, :, 2::-1].copy())


@pytest.fixture(params=["idle", "busy"])
def load(request: pytest.FixtureRequest) -> Iterator[str]:
    """Nothing, or two busy loops (one per core of the machine this suite is measured on), bounded in time."""
    loops: list[subprocess.Popen[bytes]] = []
    if request.param == "busy":
        spin = f"import time\nend = time.monotonic() + {BUSY_S}\nwhile time.monotonic() < end: pass"
        loops = [subprocess.Popen([sys.executable, "-c", spin]) for _ in range(2)]
    try:
        yield str(request.param)
    finally:
        for p in loops:
            p.kill()
            p.wait()


def pixels(b64: str) -> np.ndarray:
    """The frame's pixels with the panel clock blanked (it changes every minute of itself)."""
    return blank_clock(np.asarray(Image.open(io.BytesIO(base64.b64decode(b64))).convert("RGB")).copy())


def blank_clock(frame: np.ndarray) -> np.ndarray:
    scale = frame.shape[1] / SCREEN.width
    x, y, _, _ = clock(SCREEN)
    frame[int(y * scale) - 1 :, int(x * scale) - 1 :] = 0
    return frame


def rested(desktop: Desktop) -> str:
    return screen_at_rest(desktop, WIDTH)


def differences(a: np.ndarray, b: np.ndarray) -> str:
    """Where two frames differ (a failure in CI, where no frame is kept, says what it was about)."""
    ys, xs = np.nonzero((a != b).any(axis=2))
    where = f"x {xs.min()}-{xs.max()}, y {ys.min()}-{ys.max()} of {a.shape[1]}x{a.shape[0]}"
    return f"differs in {where}: {len(xs)} pixels"


def act(desktop: Desktop, server: xdisplay.Display, name: str, **fields: Any) -> dict[str, Any]:
    """The action as the agent sends it, checked against the screen at rest, and the screen the desktop
    captures at rest against the X server's own."""
    rested(desktop)
    body = desktop.action(name, **fields, **AGENT)
    at_rest = rested(desktop)
    said = {k: body.get(k) for k in ("settled", "settledMs", "drawn")}
    answered, rest = pixels(body["data"]["image"]), pixels(at_rest)
    assert np.array_equal(answered, rest), f"{name} {fields}: {said}; {differences(answered, rest)}"
    ours, servers = pixels(str(desktop.action("screenshot")["data"]["image"])), the_servers(server)
    assert np.array_equal(ours, servers), (
        f"{name} {fields}: the capture is not the server's screen; {differences(ours, servers)}"
    )
    return body


def test_typing_commands_in_the_terminal(desktop: Desktop, server: xdisplay.Display, load: str) -> None:
    act(desktop, server, "application", application="terminal")
    commands = (
        "echo truth-ab12cd",
        "ls -la /usr/lib | tail -20",
        "python3 -c 'print(6 * 7)'",
        "sleep 0.4; echo slept",  # its output comes when the job it started ends
        "seq 1 500 | less",  # a pager waits for keys: at rest
        "q",
        "clear",
    )
    for command in commands:
        body = act(desktop, server, "type_text", text=command + ("" if command == "q" else "\n"))
        assert body["drawn"] is True and body["settled"] is True, command
        assert body["evidence"]["screenChanged"] is True and body["evidence"]["keysDelivered"] is True


def test_typing_and_menus_in_geany(desktop: Desktop, server: xdisplay.Display, load: str) -> None:
    act(desktop, server, "application", application="code_editor")
    body = act(desktop, server, "type_text", text="def truth():\n    return 42\n")
    assert body["evidence"]["screenChanged"] is True
    act(desktop, server, "type_keys", keys=["F10"])  # the menu bar's first menu opens
    body = act(desktop, server, "type_keys", keys=["Escape"])
    assert body["evidence"]["screenChanged"] is True


def test_navigating_in_thunar(desktop: Desktop, server: xdisplay.Display, load: str) -> None:
    act(desktop, server, "application", application="directory")
    act(desktop, server, "press_keys", keys=["ctrl", "l"], press="down")
    act(desktop, server, "press_keys", keys=["ctrl", "l"], press="up")
    body = act(desktop, server, "type_text", text="/usr/share/doc\n")
    assert body["evidence"]["screenChanged"] is True


def test_keys_that_draw_nothing_are_said_to_change_nothing(
    desktop: Desktop, server: xdisplay.Display, load: str
) -> None:
    act(desktop, server, "application", application="terminal")
    before = rested(desktop)
    for press in ("down", "up"):
        body = act(desktop, server, "press_keys", keys=["shift"], press=press)
        said = (press, body["settledMs"], body["evidence"])
        assert body["drawn"] is False and body["evidence"]["screenChanged"] is False, said
        assert np.array_equal(pixels(body["data"]["image"]), pixels(before))
