"""The desktop service on the session's private Xvfb, served over real HTTP, plus helpers to observe effects.

Effects are read back independently of the service: through the test's own X connection (pointer,
active window, window classes) and through probe programs that report what they received.
"""

from __future__ import annotations

import json
import os
import pwd
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import httpx
import pytest
from Xlib import X, Xatom
from Xlib import display as xdisplay
from Xlib.error import ConnectionClosedError, XError

from deskpilot.config import DesktopSettings, SecuritySettings
from deskpilot.desktop.api import create_app
from deskpilot.desktop.controller import DesktopController
from testbed.net import ServerThread
from testbed.security import security as open_security
from testbed.timing import wait_until
from testbed.vnc import x11vnc
from testbed.xvfb import Display

T = TypeVar("T")

PROBE = Path(__file__).with_name("probe_tk.py")
MAX_FILE_BYTES = 1 << 20


def wait_for(predicate: Callable[[], T | None], timeout: float = 10, what: str = "condition") -> T:
    """What ``predicate`` returns once it is truthy (so never None)."""
    value: T = wait_until(predicate, timeout, what=what)
    return value


def stop_process(proc: subprocess.Popen | int) -> None:
    """Stop a process and its session (programs started with start_new_session): a Popen, or the pid of a
    program the service launched (a child of this process, whose service runs in a thread)."""
    if isinstance(proc, subprocess.Popen):
        if proc.poll() is not None:
            return
        pid = proc.pid
    else:
        pid = proc
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(pid, sig)
        except ProcessLookupError:
            return
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            try:
                if os.waitpid(pid, os.WNOHANG)[0]:
                    return
            except ChildProcessError:  # reaped already (by its Popen), or not ours
                if not Path(f"/proc/{pid}").exists():
                    return
            time.sleep(0.02)


class XReader:
    """The test's own X connection: reads what the service did, never drives input."""

    def __init__(self, name: str) -> None:
        self.d = xdisplay.Display(name)
        self.root = self.d.screen().root

    def close(self) -> None:
        with suppress(ConnectionClosedError):  # the test may have stopped the display
            self.d.close()

    def pointer(self) -> tuple[int, int]:
        p = self.root.query_pointer()
        return p.root_x, p.root_y

    def prop(self, name: str, kind: int = Xatom.WINDOW) -> list[int]:
        value = self.root.get_full_property(self.d.intern_atom(name), kind)
        return list(value.value) if value else []

    def active_window(self) -> int:
        v = self.prop("_NET_ACTIVE_WINDOW")
        return v[0] if v else 0

    def windows(self) -> list[int]:
        return self.prop("_NET_CLIENT_LIST")

    def title(self, wid: int) -> str:
        w = self.d.create_resource_object("window", wid)
        name = w.get_full_property(self.d.intern_atom("_NET_WM_NAME"), self.d.intern_atom("UTF8_STRING"))
        if name:
            return name.value.decode() if isinstance(name.value, bytes) else str(name.value)
        return w.get_wm_name() or ""

    def wm_class(self, wid: int) -> tuple[str, str]:
        try:
            return self.d.create_resource_object("window", wid).get_wm_class() or ("", "")
        except XError:  # gone meanwhile
            return "", ""

    def keys_down(self) -> list[int]:
        """Keycodes the X server holds down now."""
        pressed = self.d.query_keymap()
        return [kc for kc in range(8, 256) if pressed[kc // 8] & (1 << (kc % 8))]

    def find(self, title: str) -> int:
        for w in self.windows():
            try:
                if self.title(w) == title:
                    return w
            except XError:  # a window of an earlier test went away meanwhile
                continue
        return 0

    def geometry(self, wid: int) -> tuple[int, int, int, int]:
        """Root-relative (x, y, width, height) of a client window."""
        w = self.d.create_resource_object("window", wid)
        g = w.get_geometry()
        t = w.translate_coords(self.root, 0, 0)
        return -t.x, -t.y, g.width, g.height


@dataclass
class Desktop:
    url: str
    http: httpx.Client
    controller: DesktopController
    display: Display
    x: XReader

    def post(self, **body) -> httpx.Response:
        return self.http.post(f"{self.url}/computer-use", json=body)

    def act(self, **body) -> dict:
        r = self.post(**body)
        assert r.status_code == 200, r.text
        data = r.json()
        assert data["success"] is True
        return data


@contextmanager
def serve(display: Display, security: SecuritySettings | None = None, **settings: Any) -> Iterator[Desktop]:
    """The desktop service on ``display`` over real HTTP, with ``settings`` over the tests' defaults; open
    (no token, loopback hosts) unless ``security`` says otherwise."""
    config = DesktopSettings(
        **{"display": display.name, "max_file_bytes": MAX_FILE_BYTES, "app_timeout": 90, **settings}
    )
    controller = DesktopController(config)
    reader = XReader(display.name)
    app = create_app(config, controller, security or open_security())
    try:
        with (
            ServerThread(app) as server,
            httpx.Client(base_url=server.url, timeout=120) as http,
        ):
            yield Desktop(server.url, http, controller, display, reader)
    finally:
        for proc in controller.launched().values():
            stop_process(proc)
        reader.close()


@pytest.fixture(scope="session")
def desktop_home() -> Iterator[Path]:
    """The desktop user's home for the tests, instead of their real one: programs that ``application``
    starts keep their settings there, and file actions land in its Desktop. The service acts in it with
    that user's rights when it runs as root, so it is theirs, outside pytest's 0700 temporary root."""
    home = Path(tempfile.mkdtemp(prefix="deskpilot-desktop-home-"))
    (home / "Desktop").mkdir()
    for path in (home, home / "Desktop"):
        path.chmod(0o755)
        if os.geteuid() == 0:
            user = pwd.getpwnam(DesktopSettings().user)
            os.chown(path, user.pw_uid, user.pw_gid)
    yield home
    shutil.rmtree(home, ignore_errors=True)


@pytest.fixture(scope="session")
def files_dir(desktop_home: Path) -> Path:
    return desktop_home / "Desktop"


@pytest.fixture(scope="session")
def desktop(display: Display, desktop_home: Path, files_dir: Path) -> Iterator[Desktop]:
    with serve(display, home=desktop_home, files_dir=files_dir) as desktop:
        yield desktop


@dataclass
class Probe:
    proc: subprocess.Popen
    out: Path
    title: str
    wid: int
    x: int
    y: int
    width: int
    height: int

    @property
    def center(self) -> dict:
        return {"x": self.x + self.width // 2, "y": self.y + self.height // 2}

    def state(self) -> dict:
        try:
            return json.loads(self.out.read_text())
        except (FileNotFoundError, json.JSONDecodeError):
            return {}

    def wait(self, predicate: Callable[[dict], object], timeout: float = 10, what: str = "state") -> dict:
        try:
            wait_for(lambda: predicate(self.state()), timeout, what)
        except AssertionError as exc:
            raise AssertionError(f"{exc}; the probe's last state: {self.state()}") from None
        return self.state()


@pytest.fixture
def probe(desktop: Desktop, tmp_path: Path) -> Iterator[Callable[..., Probe]]:
    """Factory: start a Tk probe window at a geometry; every probe is stopped after the test."""
    started: list[Probe] = []

    def start(
        x: int = 200,
        y: int = 200,
        width: int = 600,
        height: int = 300,
        colour: str = "#ffffff",
        text: str = "",
    ) -> Probe:
        title = f"probe-{uuid.uuid4().hex[:8]}"
        out = tmp_path / f"{title}.json"
        proc = subprocess.Popen(
            [sys.executable, str(PROBE), str(out), title, f"{width}x{height}+{x}+{y}", colour, text],
            env=desktop.display.env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        wid = wait_for(lambda: desktop.x.find(title), 15, f"window {title}")
        p = Probe(proc, out, title, wid, 0, 0, width, height)
        started.append(p)
        wait_for(lambda: p.state(), 10, "probe ready")
        # where the WM actually placed it (xfwm4 may honour or adjust the requested position)
        p.x, p.y, p.width, p.height = desktop.x.geometry(wid)
        return p

    yield start
    for p in started:
        stop_process(p.proc)


def clicked_and_focused(before: int) -> Callable[[dict], object]:
    """Whether a probe's state shows the keyboard focus and more than ``before`` clicks."""
    return lambda s: s.get("focus") and len(s.get("buttons", [])) > before


def focus(desktop: Desktop, p: Probe) -> None:
    """Click the probe and wait until the click has reached it and it has the keyboard focus.

    A new probe usually reports the focus before the click (xfwm4 focuses new windows), so waiting on
    ``focus`` alone returned while xfwm4's passive button grab still held the click back; keys typed next
    then raced the WM's handling of the click. The click showing up in ``buttons`` means the WM let it
    through.
    """
    for attempt in range(3):
        # A click on a window xfwm4 is still placing can land beside it: re-read where it is, and click
        # again (at most three times) if the first one never reached it.
        p.x, p.y, p.width, p.height = desktop.x.geometry(p.wid)
        clicks = len(p.state().get("buttons", []))
        desktop.act(action="click_mouse", coordinates=p.center, button="left", clickCount=1)
        try:
            p.wait(clicked_and_focused(clicks), 4, "the click and the focus")
            return
        except AssertionError:
            if attempt == 2:
                raise


def map_input_window(desktop: Desktop, x: int, y: int, w: int, h: int):
    """A bare X window of the test's own that records button presses (for scroll buttons 4-7)."""
    d = xdisplay.Display(desktop.display.name)
    win = d.screen().root.create_window(
        x,
        y,
        w,
        h,
        0,
        X.CopyFromParent,
        X.InputOutput,
        X.CopyFromParent,
        background_pixel=d.screen().white_pixel,
        event_mask=X.ButtonPressMask | X.StructureNotifyMask,
        override_redirect=True,
    )
    win.map()
    d.sync()
    return d, win


@pytest.fixture(scope="module")
def vnc_port(display: Display) -> Iterator[int]:
    """x11vnc on the module's display, as supervisord runs it in the appliance: its port."""
    with x11vnc(display) as port:
        yield port
