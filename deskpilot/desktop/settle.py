"""Settling: waiting after an action until the screen shows what the action caused and has come to rest.

A quiet moment right after the input is not enough: an application draws its answer on its own time (the
terminal ~27 ms after the keys: its shell echoes through a pty and VTE repaints on a timer; a new window is
mapped, decorated and painted in stages). So a settle has two phases, read from the X server's DAMAGE counts:

1. **Expect.** An action that should make something draw (keys to a focused window, a click, a scroll, a
   drag, a launch) waits for the first drawing after it, at most ``expectMs``. Nothing drawn by then is an
   answer of its own: ``drawn: false``, the screen as it was.
2. **Quiet.** Then it waits until nothing has been drawn for ``quietMs``, or for twice the longest pause it
   saw between two drawings of this settle when that is longer (an application that draws in bursts,
   a terminal streaming output, is not at rest in the gap between two of them; a pause over 200 ms is two
   answers, not a cadence), and until the programs behind the window are no longer at work
   (``activity.py``: computing, or running a command the action started that sleeps on a timer), at most
   ``maxMs`` in all: ``settled: false`` when that ran out with the screen still changing or them at work.
   What the work ends with (a command's output) is drawn after its end, so the end, seen at the first look
   that no longer finds them at work, is waited out as input is (``Watch.saw_work``).

The quiet period may end early for input a client reads (keys, a click, a scroll, a drag) when the client
asked no ``quietMs`` of its own: once ``EARLY_MS`` have passed since the last drawing (or since the client
read the input, nothing drawn), and the programs behind the window (and the window manager, the panel
and the desktop) have been seen twice, ``EARLY_MS`` apart, waiting with nothing runnable and no timer due soon
(``activity.Work.resting``). What they were to draw, they have drawn: a click that draws nothing settles
~20 ms after it rather than 50.

Either way, the window that got the input confirms the rest when its client takes EWMH pings: a
``_NET_WM_PING`` sent once the programs were last found not at work (or resting) must come back, and a look
after its answer must find them so again (``Watch.confirmed``). A program between two steps of its answer,
waiting for a reply (Thunar's main thread, loading a folder, waits for the X server's replies and for
synchronous D-Bus calls with every thread asleep), looks like one at rest to /proc; it answers a ping only
once its main loop is back, and the X server does what a client asked in order, so the damage of everything
it drew before comes first.

Neither phase costs a screenshot. ``expectMs`` and ``quietMs`` left out take the action's own defaults
(``DEFAULTS``), which the truth benchmark (bench/truth.py) measured against the screen at rest.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Callable
from dataclasses import dataclass

from deskpilot.computer import actions, keys
from deskpilot.computer.fields import Settle
from deskpilot.desktop import activity
from deskpilot.desktop.x11.damage import DamageWatcher

POLL = 0.005  # seconds between looks at the damage count
CADENCE = 2.0  # at rest: no drawing for this many times the longest pause between two drawings seen
# a longer pause is no repaint cadence but two answers (a command's echo, then its output once it ended)
MAX_CADENCE_PAUSE = 0.2
# the least quiet after which the programs' own word (activity.Work.resting: every thread waits, no timer due
# soon) ends a settle, once it has held as long again: what they sent the X server before they went to wait
# is drawn by then, and a wait for another program's reply is over
EARLY_MS = 10


@dataclass(frozen=True, slots=True)
class Timing:
    """How long an action's first drawing is waited for (``expect``), how much quiet is rest (``quiet``) and,
    for input a client reads, how long after the client has read it (``answer``: 0, no such shortcut), ms;
    whether the programs' own word may end the quiet early (``early``: not when the client asked a quiet);
    for pointer input, how long after it a toolkit's delayed reaction is waited for (``reaction``, ms:
    a timer of the window's main threads due within it is work, and programs that cannot be seen resting
    are given that long)."""

    expect: int
    quiet: int
    answer: int = 0
    early: bool = True
    reaction: int = 0

    @property
    def horizon(self) -> float:
        """How far ahead a main thread's timer counts as the programs' next step (ms)."""
        return max(activity.SOON_MS, self.reaction)


QUIET_MS = 50
# toolkits react to a pointer come to rest after a delay: GTK shows a tooltip 500 ms after (Thunar's side
# pane), Firefox hides the link it showed in its status panel ~500 ms after the pointer left it, a page runs
# its timers (bench/truth.py)
REACTION_MS = 550
DEFAULTS: dict[str, Timing] = {
    # a terminal answers keys through its shell and a pty, then repaints on a timer: ~27 ms here
    **dict.fromkeys(
        ("type_text", "type_keys", "paste_text", "press_keys"), Timing(expect=500, quiet=QUIET_MS, answer=60)
    ),
    # a toolkit redraws a clicked widget on its next frame or two (60 Hz); a pointer come to rest on a
    # widget has its delayed reactions (``REACTION_MS``)
    **dict.fromkeys(
        ("click_mouse", "scroll", "drag_mouse"),
        Timing(expect=500, quiet=QUIET_MS, answer=35, reaction=REACTION_MS),
    ),
    # a window mapped, decorated and painted the first time: its stages are further apart than a repaint's
    "application": Timing(expect=2000, quiet=250),
    # hover effects are drawn at once or not at all; a tooltip (after ~500 ms) is not the action's
    **dict.fromkeys(("move_mouse", "trace_mouse", "press_mouse", "wait"), Timing(expect=0, quiet=QUIET_MS)),
}
NOTHING_EXPECTED = Timing(expect=0, quiet=QUIET_MS)
ALT_KEYSYMS = frozenset({0xFFE9, 0xFFEA, 0xFFE7, 0xFFE8})  # Alt_L, Alt_R, Meta_L, Meta_R
ALT_HELD_QUIET_MS = 350  # GTK underlines a window's mnemonics 300 ms after Alt goes down (MNEMONICS_DELAY)


def timing(action: actions.Looks, settle: Settle | None, keys_go_somewhere: bool = True) -> Timing:
    """The settle's phases for ``action``: what the client asked, else the action's defaults. Keys that go
    nowhere (no focused window), a key released, or modifiers alone pressed expect no drawing; a press that
    leaves Alt held waits for a GTK window's mnemonics, underlined 300 ms after Alt went down."""
    default = DEFAULTS.get(getattr(action, "action", ""), NOTHING_EXPECTED)
    if not _may_draw(action, keys_go_somewhere):
        default = NOTHING_EXPECTED
    if keys_go_somewhere and _holds_alt(action):
        default = Timing(default.expect, max(default.quiet, ALT_HELD_QUIET_MS), default.answer, early=False)
    if settle is None:
        return default
    return Timing(
        expect=default.expect if settle.expectMs is None else settle.expectMs,
        quiet=default.quiet if settle.quietMs is None else settle.quietMs,
        answer=default.answer,
        early=default.early and settle.quietMs is None,
        reaction=default.reaction,
    )


def _holds_alt(action: actions.Looks) -> bool:
    if not isinstance(action, actions.PressKeys) or action.press != "down":
        return False
    return any(keys.resolve(k) in ALT_KEYSYMS for k in action.keys)


def _may_draw(action: actions.Looks, keys_go_somewhere: bool) -> bool:
    keyboard = actions.TypeKeys | actions.TypeText | actions.PasteText | actions.PressKeys
    if isinstance(action, keyboard) and not keys_go_somewhere:
        return False
    if isinstance(action, actions.PressKeys) and action.press == "up":
        return False
    if isinstance(action, actions.PressKeys | actions.TypeKeys):
        return not all(keys.is_modifier(keys.resolve(k)) for k in action.keys)
    return True


@dataclass(frozen=True, slots=True)
class Rested:
    ms: float  # how long it waited, from the end of the action
    settled: bool  # at rest (False: maxMs ran out, the screen changing or the programs at work)
    drawn: bool  # something was drawn after the action (False: nothing within the expectation window)


@dataclass(slots=True)
class Watch:
    """One settle's view of the damage count: when the first and the last drawing after ``mark`` were seen,
    and the longest pause between two of them."""

    mark: int  # the damage count before the action
    started: float
    seen: int = 0
    first: float | None = None
    last: float = 0.0
    longest_pause: float = 0.0
    pings: tuple[int, ...] = ()  # the _NET_WM_PINGs sent after the input, and when the last was answered
    answered: float | None = None
    at_work: float | None = None  # when the programs behind the window were last seen at work
    work_done: float | None = None  # when they were first seen done after that: its last output is on its way
    resting: float | None = None  # since when they have been seen resting (``activity.Work.resting``)
    # pointer input into programs not (yet) seen resting: no rest before this (monotonic s; 0: none)
    floor: float = 0.0
    # the _NET_WM_PING that confirms rest (``confirmed``): its serial (0: the window takes none; None: none
    # sent) and when it was sent
    confirm: int | None = None
    confirm_sent: float = 0.0

    def look(self, watcher: DamageWatcher, sync: bool = False) -> None:
        count = watcher.poll(sync=sync)
        if self.pings and self.answered is None:
            self.answered = watcher.answered(self.pings)
        if count == self.seen or count <= self.mark:
            self.seen = max(self.seen, count)
            return
        if watcher.damaged_since(max(self.seen, self.mark)) is None:  # the clock's minute: not an answer
            self.seen = count
            return
        at = watcher.last_change
        if self.first is None:
            self.first = at
        elif at - self.last <= MAX_CADENCE_PAUSE:
            self.longest_pause = max(self.longest_pause, at - self.last)
        self.seen, self.last = count, at

    def saw_work(self, at_work: bool, now: float) -> None:
        """What a look at the programs behind the window found: at work, or done (the first look that finds
        them no longer at work: the end lies between the two looks)."""
        if at_work:
            self.at_work, self.work_done = now, None
        elif self.at_work is not None and self.work_done is None:
            self.work_done = now

    def due(self, plan: Timing) -> float:
        """When the screen counts as at rest if nothing more is drawn (monotonic seconds)."""
        return max(self.quiet_due(plan), self.floor)

    def quiet_due(self, plan: Timing) -> float:
        """``due`` but for the pointer's ``floor``."""
        if self.at_work is None:
            return self._due(plan)
        # at work: look again in a while; done: what the work ended with (a command's output, through the
        # shell and the terminal's repaint) is drawn after its end, waited for as an answer to input
        since = self.at_work if self.work_done is None else self.work_done
        return max(self._due(plan), since + max(plan.answer or plan.quiet, plan.quiet) / 1000)

    def _due(self, plan: Timing) -> float:
        if self.first is None:
            expected = self.started + max(plan.expect, plan.quiet) / 1000
            if self.answered is None or not plan.answer:
                return expected
            # the client has read the input: what it draws in answer comes within ``answer``
            return min(expected, max(self.answered + plan.answer / 1000, self.started + plan.quiet / 1000))
        return self.last + max(plan.quiet / 1000, CADENCE * self.longest_pause)

    def early(self, plan: Timing) -> float:
        """From when the programs' own word (``activity.Work.resting``) may end the settle before ``due``:
        ``EARLY_MS`` after the last drawing, or after the client read the input when nothing was drawn. Only
        for input a client reads (``answer``): a launch's stages wait on other programs."""
        if not plan.answer or not plan.early:
            return math.inf
        if self.work_done is not None and (self.first is None or self.last < self.work_done):
            return math.inf  # the work has ended and what it ended with is not drawn yet: ``due`` decides
        if self.first is None:
            return math.inf if self.answered is None else self.answered + EARLY_MS / 1000
        return self.last + EARLY_MS / 1000

    def quiet_needed(self, plan: Timing) -> float:
        return max(plan.quiet / 1000, CADENCE * self.longest_pause)

    def confirmed(self, watcher: DamageWatcher, window: int) -> bool:
        """Whether the client of ``window`` has answered a _NET_WM_PING sent after the last drawing and the
        last sighting of its programs at work; one is sent when none such is on its way. True when the window
        takes no pings (or is gone). A client answers once its main loop is back to reading events: not
        while it computes, waits for a reply (the X server's, a synchronous D-Bus call's) or runs the handler
        the input started. And the server does what a client asked in order: the answer comes after the
        damage of every drawing the client had sent before it."""
        if not window:
            return True
        if self.confirm is None or self._stale():
            self._ping(watcher, window)
            return self.confirm == 0
        return self.confirm == 0 or watcher.answered((self.confirm,)) is not None

    def awaiting(self, watcher: DamageWatcher, window: int) -> bool:
        """Whether the ping that confirms rest is on its way (sent, still valid, not answered). Sent again
        every ``REPING_S``: a window gone meanwhile would never answer (and takes none: no longer awaited)."""
        if not self.confirm or self._stale() or watcher.answered((self.confirm,)) is not None:
            return False
        if time.monotonic() - self.confirm_sent >= REPING_S:
            self._ping(watcher, window)
        return self.confirm != 0

    def _ping(self, watcher: DamageWatcher, window: int) -> None:
        self.confirm, self.confirm_sent = watcher.ping(window), time.monotonic()

    def _stale(self) -> bool:
        return self.confirm_sent < max(self.last, self.at_work or 0.0)


LOOKS_AHEAD = 3  # screenshots captured ahead during one settle, each after a drawing that outdated the last
REPING_S = 0.1  # a confirming ping unanswered this long is sent again (``Watch.awaiting``)
CONFIRM_POLL = 0.001  # seconds between looks while a confirming ping is on its way (a round trip: ~1 ms)


async def wait_for_rest(
    watcher: DamageWatcher,
    watch: Watch,
    plan: Timing,
    max_ms: int,
    capture: Callable[[], object] | None = None,
    work: activity.Work | None = None,
) -> Rested:
    """Wait through both phases (at most ``max_ms`` from ``watch.started``). With ``capture`` (the screenshot
    to answer with), it is taken once the screen has been quiet for half the quiet it needs and served if
    nothing is drawn by the end (the capture cache's rule: never older than the screen); a drawing after it
    starts another (at most ``LOOKS_AHEAD``). With ``work`` (the programs behind the window that got the
    input), a quiet screen is rest only once they are not at work (``activity.py``); after pointer input
    (``plan.reaction``), not before the programs are seen resting or the reaction time has passed."""
    limit = watch.started + max_ms / 1000
    looks: list[asyncio.Future[object]] = []
    looked_at = -1  # the damage count the last capture ahead started at
    if work is not None and plan.reaction:
        watch.floor = watch.started + plan.reaction / 1000
    asked_at_quiet = False  # whether programs not yet seen resting were asked once the quiet period ended
    try:
        while True:
            watch.look(watcher)
            now = time.monotonic()
            if work is not None and watch.floor > now and not asked_at_quiet and now >= watch.quiet_due(plan):
                # the quiet is over without the early word (a client's own quietMs): one look decides whether
                # the floor stands (Firefox's threads never look at rest: it does)
                asked_at_quiet = True
                if work.resting(plan.horizon):
                    watch.floor = 0.0
            due = watch.due(plan)
            # a ping that confirms rest is on its way: nothing to ask until its answer (or a drawing) comes
            awaiting = work is not None and watch.awaiting(watcher, work.window)
            if awaiting:
                pass
            elif now >= due:
                watch.look(watcher, sync=True)  # a drawing still on its way counts
                if work is not None and watch.due(plan) <= now:
                    watch.saw_work(work.at_work(plan.horizon), now)
                # not at work, then the window's client answers a ping, then not at work again: a program
                # caught between two steps (waiting for a reply) is not taken for one at rest
                if watch.due(plan) <= now and (work is None or watch.confirmed(watcher, work.window)):
                    return _settled(watch, now, True)
            elif work is not None and now >= watch.early(plan):
                watch.look(watcher, sync=True)  # as above
                # every look, not only at ``due``: a job that ends just before one would leave its output
                # no time to be drawn (a job only: a program found busy at ``due`` is done with its step
                # when the early word and its ping say so)
                job = work.started_job()
                watch.saw_work(job, now)
                if job or now < watch.early(plan) or not work.resting(plan.horizon):
                    watch.resting = None
                elif watch.resting is None or watch.resting < watch.early(plan):
                    watch.resting = now  # seen once: a program waiting for another's reply looks the same
                    watch.confirmed(watcher, work.window)  # the ping goes out: answered by the next look
                elif now - watch.resting >= EARLY_MS / 1000 and watch.confirmed(watcher, work.window):
                    return _settled(watch, now, True)
            if now >= limit:  # at rest only if nothing was drawn and nothing is at work
                quiet = work is None or not work.at_work(plan.horizon)
                return _settled(watch, now, watch.first is None and quiet)
            half = now >= watch.quiet_due(plan) - watch.quiet_needed(plan) / 2  # the floor may yet go
            if capture is not None and half and watch.seen != looked_at and len(looks) < LOOKS_AHEAD:
                looked_at = watch.seen
                looks.append(asyncio.ensure_future(asyncio.to_thread(capture)))
            if awaiting:
                await asyncio.sleep(CONFIRM_POLL)
            else:
                await asyncio.sleep(POLL if now >= due else _next_look(watch, plan, now, due, limit, work))
    finally:
        # the screenshot after this waits for them anyway (one capture at a time); a failed one is that
        # screenshot's to report
        await asyncio.gather(*looks, return_exceptions=True)


def _next_look(
    watch: Watch, plan: Timing, now: float, due: float, limit: float, work: activity.Work | None
) -> float:
    """Seconds to the next look: a poll, or sooner the moment the screen is due at rest, the programs may
    first be asked, or their rest may be confirmed (a poll's step late would add to every settle)."""
    wake = min(due, limit, now + POLL)
    if work is not None:
        early = watch.early(plan)
        if now < early:
            wake = min(wake, early)
        elif watch.resting is not None:
            wake = min(wake, watch.resting + EARLY_MS / 1000)
    return max(0.0, wake - now)


def _settled(watch: Watch, now: float, settled: bool) -> Rested:
    return Rested((now - watch.started) * 1000, settled, watch.first is not None)


async def first_drawing(watcher: DamageWatcher, watch: Watch, plan: Timing) -> bool:
    """Only the first phase (evidence asked without a settle): whether anything was drawn after the action
    within the expectation window; it returns at the first drawing."""
    while True:
        until = watch.due(Timing(plan.expect, 0, plan.answer))
        watch.look(watcher, sync=time.monotonic() >= until)
        if watch.first is not None:
            return True
        if time.monotonic() >= until:
            return False
        await asyncio.sleep(POLL)
