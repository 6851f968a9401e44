"""DesktopController: the one implementation of every /computer-use action.

The HTTP route and the MCP server both call ``perform(action)`` (or the per-action methods) and render the
returned ``Outcome``; neither re-implements an action. One controller per process owns the X connections:
input (XTest, EWMH), capture (MIT-SHM) and the clipboard. Input actions are serialised by one lock so two
clients never interleave keystrokes; screenshots, cursor reads, waits and files run concurrently.

If the X server goes away every display action raises ``DisplayUnavailable`` (503 + Retry-After) and the
connections are dropped; the next request reconnects, so a restarted Xvfb is picked up without a restart.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import subprocess
import threading
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path

import orjson
import pybase64

from app.computer import actions, keys
from app.config import DesktopSettings
from app.desktop import apps
from app.desktop.capture import Capturer, Image, tune_malloc
from app.desktop.files import DesktopUser, FileContent, FileStore
from app.desktop.x11 import BUTTONS, CONNECTION_ERRORS, SCROLL_BUTTONS, Clipboard, XConnection
from app.errors import ActionTimedOut, DesktopError, DisplayUnavailable, InvalidAction, TooLarge

log = logging.getLogger(__name__)

TYPE_YIELD_EVERY = 200  # characters typed between yields to the event loop when there is no delay
SCRATCH_SETTLE_S = 0.03  # pause after binding scratch keycodes, so clients re-read the whole keymap
# pause before rebinding scratch keycodes pressed in this action: clients translate a key press with the
# keymap they hold when they process it, which may be well after the press (an estimate, not a guarantee)
SCRATCH_DRAIN_S = 0.3
DRAG_STEP_S = 0.005  # pause between drag points, so WMs and toolkits see a real drag
PASTE_FETCH_TIMEOUT_S = 2.0
PASTE_SETTLE_S = 0.03
# how long a click with holdKeys waits for the window manager to let it through before the keys go up
HELD_CLICK_TIMEOUT_S = 1.0


@dataclass(frozen=True, slots=True)
class Outcome:
    """What an action produced. HTTP renders it with ``to_json``; MCP can use ``image.data`` directly."""

    message: str | None = None
    image: Image | None = None
    position: tuple[int, int] | None = None
    file: FileContent | None = None

    def to_dict(self) -> dict:
        body: dict = {"success": True}
        if self.image is not None:
            data = {"image": pybase64.b64encode_as_string(self.image.data)}
            if self.image.media_type != "image/png":
                data["mediaType"] = self.image.media_type
            body["data"] = data
        elif self.position is not None:
            body["data"] = {"x": self.position[0], "y": self.position[1]}
        elif self.file is not None:
            body["data"] = pybase64.b64encode_as_string(self.file.data)
            body.update(name=self.file.name, size=self.file.size, mediaType=self.file.media_type)
        if self.message is not None:
            body["message"] = self.message
        return body

    def to_json(self) -> bytes:
        """The 200 body of POST /computer-use, as bytes (pybase64 + orjson: ~0.1 ms for a 1 MB PNG)."""
        return orjson.dumps(self.to_dict())


class DesktopController:
    def __init__(self, settings: DesktopSettings | None = None) -> None:
        self.settings = settings or DesktopSettings()
        self.user = DesktopUser.lookup(self.settings.user)
        self.files = FileStore(self.user, self.settings.files_dir, self.settings.max_file_bytes)
        self._x: XConnection | None = None
        self._capture: Capturer | None = None
        self._clipboard: Clipboard | None = None
        self._connect_lock = threading.Lock()
        self._input_lock = asyncio.Lock()
        self._launched: dict[str, subprocess.Popen] = {}
        tune_malloc()
        self._handlers = {
            actions.MoveMouse: self.move_mouse,
            actions.TraceMouse: self.trace_mouse,
            actions.ClickMouse: self.click_mouse,
            actions.PressMouse: self.press_mouse,
            actions.DragMouse: self.drag_mouse,
            actions.Scroll: self.scroll,
            actions.TypeKeys: self.type_keys,
            actions.PressKeys: self.press_keys,
            actions.TypeText: self.type_text,
            actions.PasteText: self.paste_text,
            actions.Wait: self.wait,
            actions.Screenshot: self.screenshot,
            actions.CursorPosition: self.cursor_position,
            actions.Application: self.application,
            actions.WriteFile: self.write_file,
            actions.ReadFile: self.read_file,
        }

    async def perform(self, action: actions.Action) -> Outcome:
        """Execute one validated action (see ``actions.parse_action``)."""
        return await self._handlers[type(action)](action)

    # ------------------------------------------------------------------ connections
    def close(self) -> None:
        self._drop()
        self.files.close()

    def _drop(self) -> None:
        with self._connect_lock:
            x, cap, clip = self._x, self._capture, self._clipboard
            self._x = self._capture = self._clipboard = None
        for conn in (x, cap, clip):
            if conn is not None:
                with contextlib.suppress(Exception):
                    conn.close()

    def _unavailable(self, exc: BaseException) -> DisplayUnavailable:
        self._drop()
        return DisplayUnavailable(
            f"the X display {self.settings.display} is not available ({type(exc).__name__}: {exc}); "
            "retry in a moment"
        )

    @contextlib.contextmanager
    def _display(self) -> Iterator[XConnection]:
        try:
            with self._connect_lock:
                if self._x is None:
                    self._x = XConnection(self.settings.display)
                x = self._x
            yield x
        except CONNECTION_ERRORS as exc:
            raise self._unavailable(exc) from None

    def display_ok(self) -> bool:
        """Cheap health probe: one round trip on the input connection (reconnects if it was lost)."""
        try:
            with self._display() as x:
                x.ping()
            return True
        except DisplayUnavailable:
            return False

    def launched(self) -> dict[str, subprocess.Popen]:
        """Processes started by ``application`` (tests stop them; in the appliance they outlive requests)."""
        return dict(self._launched)

    # ------------------------------------------------------------------ helpers
    @staticmethod
    def _keycodes(x: XConnection, names: list[str] | None) -> list[int]:
        """Keycodes for key names; names missing from the layout must have been bound (``_bind_keys``)."""
        codes: list[int] = []
        for name in names or ():
            codes.extend(c for c in x.keycodes(keys.resolve(name)) if c not in codes)
        return codes

    async def _bind_keys(self, x: XConnection, names: list[str] | None) -> None:
        missing = {s for s in (keys.resolve(n) for n in names or ()) if not x.in_keymap(s)}
        if len(missing) > x.scratch_capacity():
            raise InvalidAction(
                f"at most {x.scratch_capacity()} distinct keys outside the keyboard layout per action"
            )
        await self._bind(x, missing)

    @staticmethod
    def _press(x: XConnection, codes: list[int]) -> None:
        for kc in codes:
            x.key(kc, True)

    @staticmethod
    def _release(x: XConnection, codes: list[int]) -> None:
        for kc in reversed(codes):
            x.key(kc, False)

    @contextlib.asynccontextmanager
    async def _input(self, hold: list[str] | None = None) -> AsyncIterator[XConnection]:
        """The input lock and the display, with ``hold`` keys held down around the body; syncs at the end."""
        async with self._input_lock:
            with self._display() as x:
                await self._bind_keys(x, hold)
                held = self._keycodes(x, hold)
                self._press(x, held)
                try:
                    yield x
                finally:
                    self._release(x, held)
                    x.sync()

    @staticmethod
    def _tap(x: XConnection, where: actions.Coordinates | None, button: int, count: int) -> None:
        if where is not None:
            x.move(*where.xy)
        for _ in range(count):
            x.button(button, True)
            x.button(button, False)

    # ------------------------------------------------------------------ mouse
    async def move_mouse(self, a: actions.MoveMouse) -> Outcome:
        async with self._input() as x:
            x.move(*a.coordinates.xy)
        return Outcome()

    async def trace_mouse(self, a: actions.TraceMouse) -> Outcome:
        async with self._input(a.holdKeys) as x:
            for point in a.path:
                x.move(*point.xy)
                x.sync()
        return Outcome()

    async def click_mouse(self, a: actions.ClickMouse) -> Outcome:
        async with self._input(a.holdKeys) as x:
            await self._tap_held(x, a.coordinates, BUTTONS[a.button], a.clickCount, bool(a.holdKeys))
        return Outcome()

    async def scroll(self, a: actions.Scroll) -> Outcome:
        async with self._input(a.holdKeys) as x:
            await self._tap_held(
                x, a.coordinates, SCROLL_BUTTONS[a.direction], a.scrollCount, bool(a.holdKeys)
            )
        return Outcome()

    async def _tap_held(
        self, x: XConnection, where: actions.Coordinates | None, button: int, count: int, held: bool
    ) -> None:
        """``_tap``; with keys held, keep them down until the window manager has let the clicks through.

        xfwm4 (click-to-focus) holds a synchronous passive grab on the buttons of client windows: a click
        is frozen until the WM has processed it and replays it. Key events are not frozen, so releasing the
        held keys right away would let the click reach the application after the release, without the
        modifier (a shift-click became a plain click when the WM was slow). Without held keys nothing
        waits (the click fast path). A pointer grabbed for good by a client (an open menu) costs a held click
        the bounded wait; waiting only when the pointer was free before the click is not enough, since
        the previous click may itself still be frozen.
        """
        self._tap(x, where, button, count)
        if held:
            x.sync()
            await self._poll(lambda: not x.pointer_grabbed(), HELD_CLICK_TIMEOUT_S, interval=0.002)

    async def press_mouse(self, a: actions.PressMouse) -> Outcome:
        async with self._input() as x:
            if a.coordinates is not None:
                x.move(*a.coordinates.xy)
            x.button(BUTTONS[a.button], a.press == "down")
        return Outcome()

    async def drag_mouse(self, a: actions.DragMouse) -> Outcome:
        points = [p.xy for p in a.path]
        if len(points) == 2:  # a few intermediate points so toolkits pass their drag threshold smoothly
            (x0, y0), (x1, y1) = points
            points = [(round(x0 + (x1 - x0) * i / 5), round(y0 + (y1 - y0) * i / 5)) for i in range(6)]
        pause = DRAG_STEP_S if len(points) <= 200 else 0
        button = BUTTONS[a.button]
        async with self._input(a.holdKeys) as x:
            x.move(*points[0])
            x.button(button, True)
            x.sync()
            try:
                for point in points[1:]:
                    if pause:
                        await asyncio.sleep(pause)
                    x.move(*point)
                    x.sync()
                if pause:
                    await asyncio.sleep(pause)
            finally:
                x.button(button, False)
        return Outcome()

    async def cursor_position(self, a: actions.CursorPosition) -> Outcome:
        with self._display() as x:
            return Outcome(position=x.pointer())

    # ------------------------------------------------------------------ keyboard
    async def type_keys(self, a: actions.TypeKeys) -> Outcome:
        async with self._input() as x:
            await self._bind_keys(x, a.keys)
            for i, name in enumerate(a.keys):
                if a.delay and i:
                    x.sync()
                    await asyncio.sleep(a.delay / 1000)
                codes = x.keycodes(keys.resolve(name))
                self._press(x, codes)
                self._release(x, codes)
        return Outcome()

    async def press_keys(self, a: actions.PressKeys) -> Outcome:
        async with self._input() as x:
            await self._bind_keys(x, a.keys)
            codes = self._keycodes(x, a.keys)
            if a.press == "down":
                self._press(x, codes)
            else:
                self._release(x, codes)
        return Outcome()

    async def type_text(self, a: actions.TypeText) -> Outcome:
        async with self._input() as x:
            await self._type(x, a.text, a.delay or 0)
        return Outcome()

    async def _type(self, x: XConnection, text: str, delay_ms: int) -> None:
        syms = [keys.char_keysym(c) for c in text]
        start = 0
        while start < len(syms):
            # the longest run whose characters missing from the layout fit on the scratch keycodes
            batch: set[int] = set()
            end = start
            while end < len(syms):
                sym = syms[end]
                if not x.in_keymap(sym) and sym not in batch:
                    if len(batch) >= x.scratch_capacity():
                        break
                    batch.add(sym)
                end += 1
            if start:  # the previous batch's scratch keycodes get rebound: let clients translate them first
                x.sync()
                await asyncio.sleep(SCRATCH_DRAIN_S)
            await self._bind(x, batch)
            for i in range(start, end):
                if i and delay_ms:
                    x.sync()
                    await asyncio.sleep(delay_ms / 1000)
                elif i and i % TYPE_YIELD_EVERY == 0:
                    x.sync()
                    await asyncio.sleep(0)
                codes = x.keycodes(syms[i])
                self._press(x, codes)
                self._release(x, codes)
            start = end
        x.sync()

    @staticmethod
    async def _bind(x: XConnection, keysyms: set[int]) -> None:
        """Put characters missing from the layout on scratch keycodes, then let clients re-read the keymap."""
        if keysyms and x.bind(keysyms):
            x.sync()
            await asyncio.sleep(SCRATCH_SETTLE_S)

    async def paste_text(self, a: actions.PasteText) -> Outcome:
        async with self._input() as x:
            with self._connect_lock:
                if self._clipboard is None or not self._clipboard.alive:
                    self._clipboard = Clipboard(self.settings.display)
                clip = self._clipboard
            paste = clip.offer(a.text)
            active = x.active_window()
            instance, cls = x.wm_class(active) if active else ("", "")
            terminal = cls.lower() in apps.TERMINAL_CLASSES or instance.lower() in apps.TERMINAL_CLASSES
            chord = ["ctrl", "shift", "v"] if terminal else ["ctrl", "v"]
            codes = self._keycodes(x, chord)
            self._press(x, codes)
            self._release(x, codes)
            x.sync()
            if not active:  # with no focused window nobody will fetch it
                return Outcome(message="no window has the focus; the text is on the clipboard")

            def done() -> bool:  # read (property deleted), or handed over to a client that never deletes
                written = paste.written_at
                return paste.consumed.is_set() or bool(written and time.monotonic() - written > 0.5)

            await self._poll(done, PASTE_FETCH_TIMEOUT_S, interval=0.005)
            if not paste.written_at:
                return Outcome(message="pasted, but the focused window did not fetch the clipboard")
            await asyncio.sleep(PASTE_SETTLE_S)  # the app inserts what it read before the next action
        return Outcome()

    # ------------------------------------------------------------------ other
    async def wait(self, a: actions.Wait) -> Outcome:
        await asyncio.sleep(a.duration / 1000)
        return Outcome()

    async def screenshot(self, a: actions.Screenshot) -> Outcome:
        image = await asyncio.to_thread(self.capture, a.format, a.quality, a.width, a.scale)
        return Outcome(image=image)

    def capture(
        self, fmt: str = "png", quality: int = 80, width: int | None = None, scale: float | None = None
    ) -> Image:
        """Synchronous capture + encode (used by ``screenshot`` in a worker thread, and by the bench)."""
        try:
            with self._connect_lock:
                if self._capture is None:
                    self._capture = Capturer(self.settings.display)
                cap = self._capture
            return cap.screenshot(fmt, quality, width, scale)
        except CONNECTION_ERRORS as exc:
            raise self._unavailable(exc) from None

    async def application(self, a: actions.Application) -> Outcome:
        async with self._input_lock:
            if a.application == apps.DESKTOP:
                return await self._show_desktop()
            return await self._switch_to(a.application, apps.APPLICATIONS[a.application])

    async def _show_desktop(self) -> Outcome:
        with self._display() as x:
            x.show_desktop(True)
            if await self._poll(x.showing_desktop, 5.0):
                return Outcome()
        raise ActionTimedOut("the window manager did not show the desktop within 5 s")

    def _find_window(self, x: XConnection, spec: apps.AppSpec) -> int:
        found = [w for w in x.client_windows() if apps.matches(spec, x.wm_class(w))]
        return found[-1] if found else 0

    async def _switch_to(self, name: str, spec: apps.AppSpec) -> Outcome:
        timeout = self.settings.app_timeout
        with self._display() as x:
            wid = self._find_window(x, spec)
            if not wid:
                proc = self._launched.get(name)
                if proc is None or proc.poll() is not None:
                    self._launched[name] = self._launch(spec)
                holder: list[int] = []

                def appeared() -> bool:
                    holder[:] = [self._find_window(x, spec)]
                    return bool(holder[0])

                if not await self._poll(appeared, timeout):
                    raise ActionTimedOut(f"{name} ({spec.argv[0]}) showed no window within {timeout:g} s")
                wid = holder[0]
            x.activate(wid)
            x.maximize(wid)
            x.sync()

            def focused() -> bool:
                if x.active_window() == wid and x.is_viewable(wid):
                    return True
                x.activate(wid)  # a window that just mapped may have refused focus once
                return False

            if not await self._poll(focused, min(timeout, 10.0), interval=0.05):
                raise ActionTimedOut(f"{name}'s window did not get the focus within {min(timeout, 10.0):g} s")
        return Outcome()

    @staticmethod
    async def _poll(predicate, seconds: float, interval: float = 0.02) -> bool:
        deadline = time.monotonic() + seconds
        while not predicate():
            if time.monotonic() > deadline:
                return False
            await asyncio.sleep(interval)
        return True

    def _launch(self, spec: apps.AppSpec) -> subprocess.Popen:
        """Start a program as the desktop user (when the service runs as root) or as ourselves."""
        u = self.user
        as_root = os.geteuid() == 0 and u.uid != 0
        if as_root:
            env = {
                "HOME": str(u.home),
                "USER": u.name,
                "LOGNAME": u.name,
                "DISPLAY": self.settings.display,
                "PATH": "/usr/local/bin:/usr/bin:/bin",
                "SHELL": "/bin/bash",
                "LANG": os.environ.get("LANG", "C.UTF-8"),
                "NO_AT_BRIDGE": "1",
            }
            creds: dict = {"user": u.uid, "group": u.gid, "extra_groups": []}
            cwd = u.home
        else:
            env = {**os.environ, "DISPLAY": self.settings.display, "NO_AT_BRIDGE": "1"}
            creds = {}
            cwd = Path.home()
        try:
            return subprocess.Popen(
                list(spec.argv),
                env=env,
                cwd=cwd,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                start_new_session=True,
                **creds,
            )
        except OSError as exc:
            raise InvalidAction(f"cannot start {spec.argv[0]}: {exc.strerror}; is it installed?") from None

    # ------------------------------------------------------------------ files
    async def write_file(self, a: actions.WriteFile) -> Outcome:
        try:
            data = self._decode(a.data)
            target = await self.files.write(a.path, data)
        except DesktopError as exc:
            exc.file_action = True
            raise
        return Outcome(message=f"File written to {target} ({len(data)} bytes)")

    def _decode(self, b64: str) -> bytes:
        limit = self.settings.max_file_bytes
        if len(b64) > (limit + 2) // 3 * 4 + 4:
            raise TooLarge(f"the file is larger than the limit of {limit} bytes")
        try:
            return pybase64.b64decode(b64, validate=True)
        except ValueError:
            raise InvalidAction("data is not valid base64 (standard alphabet, with padding)") from None

    async def read_file(self, a: actions.ReadFile) -> Outcome:
        try:
            return Outcome(file=await self.files.read(a.path))
        except DesktopError as exc:
            exc.file_action = True
            raise
