"""DesktopController: the one implementation of every /computer-use action.

The HTTP route and the MCP server both call ``perform(action)`` and render the returned ``Outcome``;
neither re-implements an action. One controller per process owns the X connections (``connections.py``).
Input actions are serialised by one lock (``input.py``) so two clients never interleave keystrokes;
screenshots, cursor reads, waits and files run concurrently. The actions live by what they drive:
``mouse.py``, ``keyboard.py``, ``paste.py``, ``windows.py``; screenshots, waits and files are here.
Every action is logged as one line: its name, its duration and its outcome (ok, or the error status),
and recorded in the journal (``journal.py``) with who sent it: ``perform``'s ``actor`` and ``task``.
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import logging
import math
import time
from collections.abc import Awaitable, Callable
from contextlib import nullcontext
from pathlib import Path
from typing import Any

from deskpilot import logs
from deskpilot.computer import actions
from deskpilot.computer.fields import ScreenshotOptions
from deskpilot.config import DesktopSettings
from deskpilot.desktop import activity, evidence, spans
from deskpilot.desktop import settle as settling
from deskpilot.desktop.body import decode_data
from deskpilot.desktop.capture import Image
from deskpilot.desktop.connections import Connections
from deskpilot.desktop.elements import ElementActions
from deskpilot.desktop.files import DesktopUser
from deskpilot.desktop.handsd import hands_for
from deskpilot.desktop.heap import tune_malloc
from deskpilot.desktop.input import Input
from deskpilot.desktop.journal import Journal, failure, outcome_of
from deskpilot.desktop.keyboard import KeyboardActions
from deskpilot.desktop.metrics import DesktopMetrics
from deskpilot.desktop.mouse import MouseActions
from deskpilot.desktop.outcome import Outcome
from deskpilot.desktop.paste import PasteActions
from deskpilot.desktop.reset import Reset
from deskpilot.desktop.windows import WindowActions
from deskpilot.desktop.x11 import focus as x_focus
from deskpilot.desktop.x11.connection import XConnection
from deskpilot.desktop.x11.damage import DamageWatcher
from deskpilot.errors import DesktopError

__all__ = ["DesktopController", "Outcome"]

log = logging.getLogger(__name__)

Handler = Callable[[Any], Awaitable[Outcome]]
KEYBOARD_ACTIONS = frozenset(
    {"type_keys", "press_keys", "type_text", "paste_text"}
)  # evidence: keysDelivered
POINTER_ACTIONS = frozenset({"click_mouse", "scroll", "drag_mouse"})  # the client under the pointer answers
SHELL_LOOKUP_S = 5.0  # how long "no panel, no desktop window" holds before they are looked for again


class DesktopController:
    def __init__(self, settings: DesktopSettings | None = None) -> None:
        self.settings = settings or DesktopSettings()
        self.user = DesktopUser.lookup(self.settings.user, self.settings.home)
        self.hands = hands_for(self.settings, self.user)
        self.connections = Connections(self.settings)
        # the display probe in flight: a hanging X server holds one worker thread, never more, never the loop
        self._probe: asyncio.Future[None] | None = None
        self._focus_guess = 0  # the window active at the last evidence: its title and class are asked early
        # the processes of the desktop's own programs (a settle's others), and when they were looked for
        self._shell: tuple[tuple[int, ...], float] = ((), -math.inf)
        self.metrics: DesktopMetrics | None = None  # the app's families (deskpilot/desktop/metrics.py), if on
        tune_malloc()
        shared = Input(self.connections)
        mouse, keyboard = MouseActions(shared), KeyboardActions(shared)
        self.windows = WindowActions(shared, self.settings, self.hands)
        self.reset = Reset(shared, self.windows, self.hands, self.settings.skeleton)
        self.journal = Journal(self.settings, lambda: self.capture().data, self.settle)
        self.elements = ElementActions(self.connections, self.hands, mouse.click_mouse)
        self._handlers: dict[type[actions.Action], Handler] = {
            actions.MoveMouse: mouse.move_mouse,
            actions.TraceMouse: mouse.trace_mouse,
            actions.ClickMouse: mouse.click_mouse,
            actions.PressMouse: mouse.press_mouse,
            actions.DragMouse: mouse.drag_mouse,
            actions.Scroll: mouse.scroll,
            actions.CursorPosition: mouse.cursor_position,
            actions.TypeKeys: keyboard.type_keys,
            actions.PressKeys: keyboard.press_keys,
            actions.TypeText: keyboard.type_text,
            actions.PasteText: PasteActions(shared).paste_text,
            actions.Application: self.windows.application,
            actions.Accessibility: self.elements.accessibility,
            actions.Wait: self.wait,
            actions.Screenshot: self.screenshot,
            actions.WriteFile: self.write_file,
            actions.ReadFile: self.read_file,
        }

    async def perform(
        self,
        action: actions.Action,
        actor: str = "api",
        task: str | None = None,
        caller: bytes | None = None,
    ) -> Outcome:
        """Execute one validated action (see ``actions.parse_action``) sent by ``actor`` (journal.ACTORS),
        for ``task`` when the agent names one. With traces on, its span, ``desktop.perform`` (spans.py), is a
        child of ``caller``'s, the request's ``traceparent`` (``spans.traceparent``); its log line names the
        task."""
        about = logs.about_task(task) if task else nullcontext()
        with spans.perform(action.action, actor, task, caller) as span, about:
            try:
                result = await self._perform(action, actor, task)
            except BaseException as exc:
                span.failed(exc, failure(exc)[0])
                raise
            span.done(result.settled_ms, result.settled)
            return result

    async def _perform(self, action: actions.Action, actor: str, task: str | None) -> Outcome:
        started = time.perf_counter()
        outcome, error, result = "500", None, None
        try:
            wants_evidence = isinstance(action, actions.Observed) and action.evidence
            before = await self._before(action) if wants_evidence else None
            # what was drawn before an input action is not its doing: the count it starts from
            mark = before.changes if before else await self._mark(action)
            jobs = self._jobs_before(action) if getattr(action, "settle", None) is not None else None
            if getattr(action, "element", None) is not None:  # an accessibility id: where it is now
                action = await self.elements.resolve(action)
            result = await self._handlers[type(action)](action)
            if isinstance(action, actions.Looks):  # the input actions and wait
                result = await self.observe(action, result, before, mark, jobs)
            outcome = "ok"
            return result
        except BaseException as exc:  # a client that went away too (CancelledError)
            outcome, error = failure(exc)
            raise
        finally:
            ms = (time.perf_counter() - started) * 1000
            log.info("action", extra={"action": action.action, "ms": ms, "outcome": outcome})
            if self.metrics is not None:
                self.metrics.action(action.action, ms / 1000, result)
            image = result.image if result is not None else None
            self.journal.record(actor, action, outcome_of(outcome, error), task=task, image=image)

    def close(self) -> None:
        self.journal.close()
        self.connections.close()
        self.hands.close()

    async def display_problem(self) -> str | None:
        """The /health probe of the display: None when it answers and is ours, else what is wrong."""
        loop = asyncio.get_running_loop()
        probe = self._probe
        if probe is None or probe.done() or probe.get_loop() is not loop:
            probe = self._probe = loop.run_in_executor(None, self.connections.check)
        try:
            await asyncio.shield(probe)  # a caller that stops waiting leaves it to the next one
        except DesktopError as exc:
            return exc.message
        return None

    def health_probes(self) -> dict[str, Callable[[], Awaitable[str | None]]]:
        """What /health asks: the display; and with the desktop user's worker (the appliance, which runs the
        session's AT-SPI bus) whether that bus answers, ``accessibility``."""
        probes: dict[str, Callable[[], Awaitable[str | None]]] = {"display": self.display_problem}
        if self.settings.hands_socket is not None:
            probes["accessibility"] = self.hands.accessibility_problem
        return probes

    def launched(self) -> dict[str, int]:
        """The pids of the programs ``application`` started (tests stop them; in the appliance they outlive
        requests)."""
        return dict(self.windows.launched)

    # ------------------------------------------------------------------ screen
    async def screenshot(self, action: actions.Screenshot) -> Outcome:
        return Outcome(image=await self.shoot(action))

    async def shoot(self, options: ScreenshotOptions) -> Image:
        """A screenshot: served again in line when nothing was drawn since the same one (one round trip),
        else captured in a worker thread."""
        image = self.connections.again(options)
        return image if image is not None else await asyncio.to_thread(self.capture, options)

    def capture(self, options: ScreenshotOptions | None = None) -> Image:
        """Synchronous capture + encode (used by ``screenshot`` in a worker thread, and by the bench)."""
        return self.connections.capture(options)

    async def observe(
        self,
        action: actions.Looks,
        result: Outcome,
        before: evidence.Before | None = None,
        mark: int | None = None,
        jobs: tuple[int, set[int]] | None = None,
    ) -> Outcome:
        """What an action asked to see afterwards: the screen settled (``settle.py``), a screenshot of it,
        evidence (input actions only: ``before`` is None for a wait). Evidence without a settle still waits
        for the action's first drawing (at most its expectation window), so "nothing changed" is never said
        of a screen the application has yet to redraw."""
        if action.settle is not None or before is not None:
            started = time.monotonic()
            if isinstance(action, actions.Wait):
                mark = await self._damage_now()  # a wait settles from its end
            keys_go_somewhere, responders = self._responders(action)
            plan = settling.timing(action, action.settle, keys_go_somewhere)
            watcher = await asyncio.to_thread(self.connections.damage) if mark is not None else None
            watch = settling.Watch(mark, started, seen=mark) if mark is not None else None
            if watcher is not None and watch is not None and plan.answer and responders:
                pings = tuple(watcher.ping(wid) for wid in responders)
                watch.pings = () if 0 in pings else pings  # one that takes no pings cannot say it has read
            if action.settle is not None:
                work = self._work(action, responders, jobs)
                done = await self._settle(watcher, watch, plan, action.settle.maxMs, action.screenshot, work)
                result = dataclasses.replace(
                    result, settled_ms=done.ms, settled=done.settled, drawn=done.drawn
                )
            elif watcher is not None and watch is not None:
                await settling.first_drawing(watcher, watch, plan)
        if action.screenshot is not None:
            result = dataclasses.replace(result, image=await self.shoot(action.screenshot))
        if before is not None:
            after = await self._after(action, before)
            result = dataclasses.replace(result, evidence=evidence.report(before, after))
        return result

    async def _settle(
        self,
        watcher: DamageWatcher | None,
        watch: settling.Watch | None,
        plan: settling.Timing,
        max_ms: int,
        ahead: ScreenshotOptions | None = None,
        work: activity.Work | None = None,
    ) -> settling.Rested:
        """Both phases of a settle; without damage tracking it waits the quiet period and cannot tell."""
        if watcher is None or watch is None:
            waited = min(plan.quiet, max_ms)
            await asyncio.sleep(waited / 1000)
            return settling.Rested(waited, False, True)
        capture = functools.partial(self.capture, ahead) if ahead is not None else None
        return await settling.wait_for_rest(watcher, watch, plan, max_ms, capture, work)

    async def _mark(self, action: actions.Action) -> int | None:
        """The damage count before an input action that settles (None for the others, or without damage)."""
        if isinstance(action, actions.Observed) and action.settle is not None:
            return await self._damage_now()
        return None

    def _jobs_before(self, action: actions.Action) -> tuple[int, set[int]] | None:
        """For keys: the focused window's process and the terminal jobs it ran before the action."""
        if getattr(action, "action", "") not in KEYBOARD_ACTIONS:
            return None
        with self.connections.using() as x:
            pid = x.window_pid(x.active_window())
        return (pid, activity.jobs(activity.tree(pid))) if pid else None

    def _work(
        self, action: actions.Looks, responders: list[int], jobs: tuple[int, set[int]] | None
    ) -> activity.Work | None:
        """The programs behind the window that got the input (a launch: the window it shows), and the others
        that draw in answer: the window manager (frames, titles) and the desktop's shell (a panel's task
        buttons follow new windows, the focus and titles)."""
        with self.connections.using() as x:
            wids = [x.active_window()] if isinstance(action, actions.Application) else responders[:1]
            pid = x.window_pid(wids[0]) if wids and wids[0] else 0
            others = set(self._shell_pids(x)) - {pid}
        if pid <= 0:
            return None
        before = jobs[1] if jobs is not None and jobs[0] == pid else activity.jobs(activity.tree(pid))
        hands = self.hands
        return activity.Work(
            pid, before, hands.on_a_timer, tuple(others), hands.waiting, hands.timer_soon, window=wids[0]
        )

    def _shell_pids(self, x: XConnection) -> tuple[int, ...]:
        """The processes of the desktop's own programs: the window manager and those behind the desktop's
        windows (panels, the desktop). Found again when one of them has ended, or when none but the window
        manager was found (a panel starting after the first action) a few seconds ago."""
        pids, found = self._shell
        stale = len(pids) < 2 and time.monotonic() - found > SHELL_LOOKUP_S
        if stale or not all(Path(f"/proc/{pid}").exists() for pid in pids):
            wids = [x.window_manager(), *x.shell_windows()]
            self._shell = (tuple({x.window_pid(wid) for wid in wids if wid} - {0}), time.monotonic())
        return self._shell[0]

    def _responders(self, action: actions.Looks) -> tuple[bool, list[int]]:
        """Whether a keyboard action's keys had a window to go to (the X input focus is not None), and the
        windows of the clients that received the input: the focused one for keys; for the pointer the one
        under it and the window manager (which draws the frames, and takes clicks on the bare root)."""
        name = getattr(action, "action", "")
        with self.connections.using() as x:
            if name in KEYBOARD_ACTIONS:
                to = x_focus.keys_to(x)
                return to is not None, [to.id] if to is not None and to.id else []
            if name in POINTER_ACTIONS:
                return True, [wid for wid in (x.client_at_pointer(), x.window_manager()) if wid]
        return True, []

    async def _after(self, action: actions.Looks, before: evidence.Before) -> evidence.After:
        inline = self.connections.capture_path is not None
        with self.connections.using() as x:
            guess = before.focus.id if before.focus else 0
            asked = x_focus.ask(x, pointer=True, guess=guess)
            now = self._damage_count() if inline else None  # its round trip overlaps the reads asked
            focus, pointer = x_focus.answer(x, asked)
            keyboard = getattr(action, "action", "") in KEYBOARD_ACTIONS
            keys = x_focus.keys_to(x) if keyboard else False
        if not inline:
            now = await self._damage_now()
        watcher = self.connections.damage() if now is not None else None
        damaged = watcher.damaged_since(before.changes) if watcher and before.changes is not None else None
        text = await self.elements.text_after(before.text)
        return evidence.After(focus, pointer, now, damaged, keys, text)

    async def _before(self, action: actions.Action) -> evidence.Before:
        inline = self.connections.capture_path is not None
        keyboard = action.action in KEYBOARD_ACTIONS
        with self.connections.using() as x:
            asked = x_focus.ask(x, guess=self._focus_guess)
            changes = self._damage_count() if inline else None  # its round trip overlaps the read asked
            focus, _ = x_focus.answer(x, asked)
            self._focus_guess = focus.id if focus else 0
            pid = x.window_pid(focus.id) if keyboard and focus is not None else 0
        text = await self.elements.text_before(action, pid) if keyboard else None
        return evidence.Before(focus, changes if inline else await self._damage_now(), text)

    async def _damage_now(self) -> int | None:
        """The damage count after a round trip: in line once the capture connection is open (one request,
        ~0.1 ms, cheaper than a thread hop), else in a thread, which may have to open it."""
        if self.connections.capture_path is not None:
            return self._damage_count()
        return await asyncio.to_thread(self._damage_count)

    def _damage_count(self) -> int | None:
        return evidence.changes(self.connections.damage())

    async def settle(self, quiet_ms: int, max_ms: int) -> tuple[float, bool]:
        """Wait until nothing was drawn for ``quiet_ms`` from now, at most ``max_ms``: (milliseconds waited,
        whether the screen settled). The journal's settle, after its input stopped."""
        mark = await self._damage_now()
        watcher = await asyncio.to_thread(self.connections.damage) if mark is not None else None
        watch = settling.Watch(mark, time.monotonic(), seen=mark) if mark is not None else None
        done = await self._settle(watcher, watch, settling.Timing(expect=0, quiet=quiet_ms), max_ms)
        return done.ms, done.settled

    async def wait(self, action: actions.Wait) -> Outcome:
        # the whole duration, never less: uvloop's timers count whole milliseconds and may fire one early
        await asyncio.sleep((action.duration + 1) / 1000)
        return Outcome()

    # ------------------------------------------------------------------ files
    async def write_file(self, action: actions.WriteFile) -> Outcome:
        try:
            data = decode_data(action, self.settings.max_file_bytes)  # the base64 is let go of here
            target = await self.hands.write(action.path, data, overwrite=action.overwrite)
        except DesktopError as exc:
            exc.file_action = True
            raise
        return Outcome(message=f"File written to {target} ({len(data)} bytes)")

    async def read_file(self, action: actions.ReadFile) -> Outcome:
        try:
            return Outcome(file=await self.hands.read(action.path))
        except DesktopError as exc:
            exc.file_action = True
            raise
