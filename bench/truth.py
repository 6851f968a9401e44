"""Settle truth: does the frame an action answers with show the screen the action leads to?

A corpus of real actions in the appliance's own applications (bench/truth_corpus.py: terminal commands,
Geany typing and menus, Thunar navigation, Firefox loading a local page and following its links, KeePassXC
unlocking a database, every application launched and closed) runs in a private native sandbox. Each action
starts from a screen at rest and is judged against the screen at rest after it.

At rest: once the answer is in, full-size screenshots are taken every 100 ms until they have been identical
for 2 s, or (a blinking caret) have alternated between the same two frames, each shown again, over 2 s; at
most 8 s: an action whose screen does not rest by then is left out of the figures, and counted. Every
comparison masks the panel clock and is exact: identical pixels (the desktop's downscale of one screen is
one image, so any difference is a difference of the screen).

  frame truth     the answered frame (1280 wide, as the agent asks) is the rested screen taken at that size
                  (either frame of a blinking one);
  evidence truth  ``screenChanged: false`` holds if the rested screen is the one before the action,
                  ``true`` if it is not; the "nothing changed" claims also on their own (target: 100 %);
  settle          ours: the answer's ``settledMs``; a baseline: the wall time from the action's answer to
                  its frame;
  terminal draw   for typing into the terminal, when the terminal really finished drawing: the last drawing
                  (X DAMAGE on the sandbox's display, outside the clock, before the rested screen was first
                  seen) from the action's send, against our settle time on the same actions (target:
                  settle p50 within 1.5x of it).

Methods, in the same run: "ours" sends the action with the fields the agent sends (``Computer.observe``
filtered to the fields the action's model takes, with the agent's default settings); "frames" sends the
action alone, then runs the agent's frame-compare loop (deskpilot/agent/frames.py, the agent's settings);
"sleep750" sends it alone, sleeps 750 ms and takes a screenshot. Every third action (``--baseline-every``)
runs a baseline instead of ours, frames and sleep750 in turn: each action is judged once, the run stays short.

Loads: idle; busy (two busy loops started before the sandbox, killed at the end); tests (a part of the test
suite, tests/integration/desktop, restarted while the load lasts, interrupted at the end); all (the three
in turn, a sandbox each).

    .venv/bin/python bench/truth.py --load idle --limit 30                   # a couple of minutes
    .venv/bin/python bench/truth.py                                          # --load all, ~25 minutes
    .venv/bin/python bench/truth.py --load busy --limit 60 --out /tmp/truth.json --frames /tmp/truth-frames
    .venv/bin/python bench/truth.py --load idle --group terminal --group browser
    mkdir /tmp/before && git archive <commit> | tar -x -C /tmp/before        # the same bench, older code:
    .venv/bin/python bench/truth.py --load idle --checkout /tmp/before

``--checkout DIR`` runs the sandbox from that checkout and takes the agent's fields and frame-compare loop
from its code too (imported instead of this one's). The sandbox's display repeats no held key: a chord is
two actions (keys down, keys up) with a rest between them, where a repeating key would type on. Run as
root, as every native sandbox. Not a test: the figures move with the load.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import hashlib
import io
import itertools
import json
import os
import select
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pybase64
from PIL import Image

ROOT = Path(__file__).resolve().parents[1]


def _checkout(argv: list[str]) -> Path:
    """The checkout measured: its code gives the sandbox, the agent's fields and the frame-compare loop."""
    pre = argparse.ArgumentParser(add_help=False)
    pre.add_argument("--checkout", type=Path)
    return (pre.parse_known_args(argv)[0].checkout or ROOT).resolve()


CHECKOUT = _checkout(sys.argv[1:])
sys.path.insert(0, str(CHECKOUT))

# the corpus beside this script, whatever the checkout measured (mypy, run from the repo, knows it as bench.*)
if TYPE_CHECKING:
    from bench.truth_corpus import CORPUS, SETUP, Act, Row
else:
    from truth_corpus import CORPUS, SETUP, Act, Row

from deskpilot.agent.computer import Computer  # noqa: E402
from deskpilot.agent.frames import settle  # noqa: E402
from deskpilot.client import processes  # noqa: E402
from deskpilot.client.sandboxes import Sandbox, sandbox  # noqa: E402
from deskpilot.computer.actions import ACTION_MODELS  # noqa: E402
from deskpilot.computer.client import AsyncDesktop, DesktopClientError  # noqa: E402
from deskpilot.config import AgentSettings  # noqa: E402

SCREEN_W, SCREEN_H = 1920, 1080
# The panel clock, the rightmost item of the 32-px bottom panel (the date over the time, x 1854-1916 on a
# saved screenshot; the show-desktop button ends at 1847): masked, so a minute turning over is no change.
CLOCK = (1850, 1048, SCREEN_W, SCREEN_H)  # x0, y0, x1, y1 (exclusive)
REST_QUIET = 2.0  # seconds a screen must hold (or blink between the same two frames) to be at rest
REST_POLL = 0.1
REST_MAX = 8.0
BLINK_CHANGES = 3  # a blink: two frames, A B A B, within the quiet time (one change A -> B is no blink)
SLEEP_BASELINE = 0.75
SMALL_DIFF = 1000  # an untrue frame differing in fewer pixels (of 1280x720) is reported as "small"
LOAD_SECONDS = 3600  # the bound of every load the bench starts, should it be left behind
METHODS = ("ours", "frames", "sleep750")
TYPING = ("type_text", "type_keys", "paste_text")
TESTS_LOAD = [".venv/bin/pytest", "-q", "-x", "tests/integration/desktop", "-p", "no:cacheprovider"]


# ------------------------------------------------------------------------------------------ images


def clock_mask(width: int) -> tuple[int, int, int, int]:
    """The clock's box in an image ``width`` wide, a pixel wider each way (the area filter blends edges)."""
    s = width / SCREEN_W
    x0, y0, x1, y1 = CLOCK
    return max(0, int(x0 * s) - 1), max(0, int(y0 * s) - 1), round(x1 * s), round(y1 * s)


def pixels(b64: str) -> np.ndarray:
    """The image's RGB pixels, the clock blacked out."""
    with Image.open(io.BytesIO(pybase64.b64decode(b64))) as im:
        a = np.array(im.convert("RGB"))
    x0, y0, x1, y1 = clock_mask(a.shape[1])
    a[y0:y1, x0:x1] = 0
    return a


class Keys:
    """A key per screenshot that two screenshots share exactly when their pixels (clock masked) are equal;
    the last few screenshots' keys are kept, as one screen is shot again and again."""

    def __init__(self) -> None:
        self.known: dict[str, str] = {}

    def __call__(self, b64: str) -> str:
        key = self.known.get(b64)
        if key is None:
            a = pixels(b64)
            key = f"{a.shape[1]}:" + hashlib.blake2b(a.tobytes(), digest_size=12).hexdigest()
            if len(self.known) > 64:
                self.known.clear()
            self.known[b64] = key
        return key


def diff(a: str, b: str) -> tuple[int, tuple[int, int, int, int] | None]:
    """How many pixels differ between two images (clock masked), and their bounding box."""
    pa, pb = pixels(a), pixels(b)
    if pa.shape != pb.shape:
        return pa.shape[0] * pa.shape[1], None
    differ = (pa != pb).any(axis=2)
    n = int(differ.sum())
    if not n:
        return 0, None
    ys, xs = np.nonzero(differ)
    return n, (int(xs.min()), int(ys.min()), int(xs.max()) + 1, int(ys.max()) + 1)


@dataclass
class Rest:
    """A screen at rest: the keys of its full-size frames (two when it blinks), and when it began."""

    rested: bool
    keys: frozenset[str]
    since: float  # when its last change was first seen (monotonic)
    seconds: float  # waited for it
    blink: bool = False
    small: dict[str, str] = field(default_factory=dict)  # key -> base64, of its frames at the agent's size


# ------------------------------------------------------------------------------------------ damage


def in_clock(x: int, y: int, w: int, h: int) -> bool:
    return x >= CLOCK[0] and y >= CLOCK[1] and x + w <= CLOCK[2] and y + h <= CLOCK[3]


class Drawings:
    """Every drawing on the sandbox's display outside the clock, with its time: a DAMAGE watcher of our
    own, on a thread. The X server stamps each event with its own clock (milliseconds of CLOCK_MONOTONIC
    on Linux, as ``time.monotonic``): that time is kept while it agrees with the time the event is read,
    so a busy machine delaying this thread does not delay the drawing; else the time read is kept."""

    def __init__(self, name: str, xauthority: str) -> None:
        from Xlib import X
        from Xlib import display as xdisplay
        from Xlib.ext import damage

        saved = os.environ.get("XAUTHORITY")
        os.environ["XAUTHORITY"] = xauthority  # python-xlib reads the cookie from there
        try:
            self.display = xdisplay.Display(name)
        finally:
            if saved is None:
                os.environ.pop("XAUTHORITY", None)
            else:
                os.environ["XAUTHORITY"] = saved
        # a chord's keys stay down through the rest between its down and its up: the server would repeat
        # them after 660 ms and type on, so this private display repeats no key
        self.display.change_keyboard_control(auto_repeat_mode=X.AutoRepeatModeOff)
        self.display.damage_query_version()
        self.damage = self.display.screen().root.damage_create(damage.DamageReportBoundingBox)
        self.display.sync()
        self.events: list[float] = []
        self.server_clock = True
        self.lock = threading.Lock()
        self.stopping = False
        self.thread = threading.Thread(target=self._run, name="damage", daemon=True)
        self.thread.start()

    def _run(self) -> None:
        fd = self.display.fileno()
        while not self.stopping:
            select.select([fd], [], [], 0.05)
            read = 0
            while self.display.pending_events():
                event = self.display.next_event()
                read += 1
                area = getattr(event, "area", None)
                if area is None or not area.width or not area.height:
                    continue  # the server's cursor bookkeeping: no pixel changed
                if not in_clock(area.x, area.y, area.width, area.height):
                    self._record(int(getattr(event, "timestamp", 0)))
            if read:
                self.display.damage_subtract(self.damage)
                self.display.flush()

    def _record(self, stamp: int) -> None:
        now = time.monotonic()
        # the server's stamp is 32-bit milliseconds: the latest such time at or before now
        stamped = now - ((int(now * 1000) - stamp) % 2**32) / 1000
        if self.server_clock and not 0 <= now - stamped < 1.0:
            self.server_clock = False
        with self.lock:
            self.events.append(stamped if self.server_clock else now)
            if len(self.events) > 20_000:
                del self.events[:10_000]

    def last_between(self, start: float, end: float) -> float | None:
        """The time of the last drawing in [start, end], None when there was none."""
        with self.lock:
            inside = [t for t in self.events if start <= t <= end]
        return max(inside) if inside else None

    def close(self) -> None:
        self.stopping = True
        self.thread.join(2)
        with contextlib.suppress(Exception):
            self.display.close()


def sandbox_display() -> tuple[str, str]:
    """The display and X authority file of the sandbox's Xvfb (our descendant), from its command line."""
    for pid in processes.descendants():
        try:
            argv = Path(f"/proc/{pid}/cmdline").read_bytes().decode().split("\0")
        except OSError:
            continue
        if argv and Path(argv[0]).name == "Xvfb" and "-auth" in argv:
            return argv[1], argv[argv.index("-auth") + 1]
    raise RuntimeError("no Xvfb among the sandbox's processes")


# ------------------------------------------------------------------------------------------ loads


def alive(pids: list[int]) -> list[int]:
    """Those of ``pids`` still running (zombies are not)."""
    out = []
    for pid in pids:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if state != "Z":
            out.append(pid)
    return out


@contextlib.contextmanager
def idle_load(seconds: float) -> Iterator[str]:
    yield "nothing else running"


@contextlib.contextmanager
def busy_load(seconds: float) -> Iterator[str]:
    """Two busy loops, started before the sandbox (so it does not take them for its own), bounded in time."""
    loop = f"import time\nend = time.monotonic() + {seconds}\nwhile time.monotonic() < end: pass"
    procs = [subprocess.Popen([sys.executable, "-c", loop]) for _ in range(2)]
    try:
        yield "two busy loops"
    finally:
        for p in procs:
            p.kill()
            p.wait()


# The test suite runs detached: the launcher forks, prints the child's pid and exits, so the suite's
# processes are no descendants of ours and the sandbox does not report them as its leftovers. The child
# restarts the suite until the bound or an interrupt; an interrupt lets pytest tear its displays down.
DETACHED = """
import os, subprocess, sys, time
pid = os.fork()
if pid:
    print(pid, flush=True)
    os._exit(0)
null = os.open(os.devnull, os.O_RDWR)
for fd in (0, 1, 2):  # not the launcher's pipe: whoever reads it waits for its end
    os.dup2(null, fd)
end = time.monotonic() + float(sys.argv[1])
try:
    while time.monotonic() < end:
        began = time.monotonic()
        p = subprocess.Popen(sys.argv[3:])
        try:
            code = p.wait()
        except KeyboardInterrupt:
            p.wait(30)
            break
        with open(sys.argv[2], "a") as log:
            log.write(f"{code} {time.monotonic() - began:.0f}\\n")
except KeyboardInterrupt:
    pass
"""


@contextlib.contextmanager
def tests_load(seconds: float) -> Iterator[str]:
    """A part of the test suite running beside the sandbox, restarted while the load lasts, then
    interrupted (SIGINT to its process group) and whatever outlives that killed."""
    runs = Path(tempfile.mkstemp(prefix="truth-tests-load-")[1])  # a line per finished run: exit code, s
    pid = 0
    try:
        launcher = subprocess.Popen(
            [sys.executable, "-c", DETACHED, str(seconds), str(runs), *TESTS_LOAD],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            text=True,
            start_new_session=True,  # a process group of its own (its pid): the interrupt reaches pytest
        )
        pid = int(launcher.communicate(timeout=30)[0].split()[0])
        yield f"{' '.join(TESTS_LOAD)}, restarted while the load lasts"
    finally:
        if pid:
            tree = [pid, *processes.descendants(pid)]
            with contextlib.suppress(ProcessLookupError):
                os.killpg(launcher.pid, signal.SIGINT)
            deadline = time.monotonic() + 30
            while alive([pid]) and time.monotonic() < deadline:
                time.sleep(0.2)
            for p in alive([*tree, *processes.descendants(pid)]):
                processes.kill(p)
        done = [line.split() for line in runs.read_text().splitlines()]
        runs.unlink()
        print(
            f"  tests load: {len(done)} runs of the suite part finished before it was interrupted"
            + (f" (exit code, seconds: {', '.join('/'.join(d) for d in done)})" if done else "")
        )


LOADS = {"idle": idle_load, "busy": busy_load, "tests": tests_load}


# ------------------------------------------------------------------------------------------ running


@dataclass
class Result:
    load: str
    index: int  # in the corpus
    label: str
    group: str
    action: str
    method: str
    error: str | None = None
    rested: bool = True  # the screen came to rest after the action (else left out of the figures)
    blink: bool = False  # it rested blinking between two frames
    rest_s: float = 0.0  # from the answer to the rest
    frame_true: bool | None = None
    frame_diff_pixels: int = 0  # against the rested screen (its first frame when it blinks)
    frame_diff_box: tuple[int, int, int, int] | None = None  # in the frame's pixels
    changed: bool | None = None  # the rested screen is not the one before the action
    claim: bool | None = None  # evidence.screenChanged
    claim_true: bool | None = None
    settled: bool | None = None
    drawn: bool | None = None
    settle_ms: float | None = None
    act_ms: float = 0.0  # the action's request, send to answer (ours: its settle included)
    draw_ms: float | None = None  # the last drawing from the send
    answer: dict[str, Any] = field(default_factory=dict)  # the answer without its image


def method_of(index: int, every: int) -> str:
    """Every ``every``-th action runs a baseline instead of ours, frames and sleep750 in turn."""
    if every <= 0 or index % every != every - 1:
        return "ours"
    return METHODS[1 + (index // every) % 2]


def substitute(value: Any, home: str) -> Any:
    """``{home}`` replaced in every string of an action (str.replace: the pages' CSS has braces)."""
    if isinstance(value, str):
        return value.replace("{home}", home)
    if isinstance(value, dict):
        return {k: substitute(v, home) for k, v in value.items()}
    if isinstance(value, list):
        return [substitute(v, home) for v in value]
    return value


class Bench:
    def __init__(self, box: Sandbox, load: str, every: int, frames_dir: Path | None) -> None:
        self.load = load
        self.every = every
        self.frames_dir = frames_dir
        self.settings = AgentSettings()
        self.desktop: AsyncDesktop = box.async_desktop()
        self.computer = Computer(self.desktop, self.settings)
        self.width = self.computer.image.width  # the agent's screenshots
        self.key = Keys()
        self.home = ""
        self.drawings = Drawings(*sandbox_display())
        self.state = Rest(False, frozenset(), 0.0, 0.0)  # the screen at rest before the next action

    async def close(self) -> None:
        self.drawings.close()
        await self.desktop.aclose()

    async def shot(self, width: int | None = None) -> str:
        body = await self.desktop.action("screenshot", **({"width": width} if width else {}))
        return str(body["data"]["image"])

    async def rest(self) -> Rest:
        """Wait for the screen to rest (see the module's docstring), then take its frames at the agent's
        size; rest again if it moved meanwhile."""
        start = time.monotonic()
        while True:
            found = await self._still_or_blinking(start)
            if not found.rested:
                small = await self.shot(self.width)
                found.small = {self.key(small): small}
                break
            if await self._small_frames(found):
                break
        self.state = found
        return found

    async def _still_or_blinking(self, start: float) -> Rest:
        seen: list[tuple[float, str]] = []  # (time, key) of each screenshot
        since = start
        while True:
            key = self.key(await self.shot())
            now = time.monotonic()
            if seen and key != seen[-1][1]:
                since = now
            seen.append((now, key))
            if seen[0][0] <= now - REST_QUIET:
                window = [k for t, k in seen if t >= now - REST_QUIET]
                if now - since >= REST_QUIET:
                    return Rest(True, frozenset({key}), since, now - start)
                changes = sum(a != b for a, b in itertools.pairwise(window))
                if len(set(window)) == 2 and changes >= BLINK_CHANGES:
                    return Rest(True, frozenset(window), since, now - start, blink=True)
            if now - start >= REST_MAX:
                return Rest(False, frozenset({key}), since, now - start)
            await asyncio.sleep(REST_POLL)

    async def _small_frames(self, found: Rest) -> bool:
        """The rested screen's frames at the agent's size, each checked to be taken while the screen was
        one of the rested frames; False if it was not (it moved on)."""
        deadline = time.monotonic() + 1.5
        while True:
            small = await self.shot(self.width)
            if self.key(await self.shot()) not in found.keys:
                return False
            found.small.setdefault(self.key(small), small)
            if not found.blink or len(found.small) >= 2 or time.monotonic() > deadline:
                return True
            await asyncio.sleep(REST_POLL)

    async def start_group(self, group: str) -> None:
        """A reset desktop, the group's files, and a screen at rest."""
        await self.desktop.reset()
        if not self.home:
            self.home = str((await self.desktop.command('printf %s "$HOME"'))["stdout"])
        for step in SETUP.get(group, []):
            step = substitute(step, self.home)
            if step["action"] == "command":
                out = await self.desktop.command(step["command"])
                if out.get("exitCode") != 0:
                    print(f"  setup of {group}: {step['command'][:60]!r} failed: {out.get('stderr')!r}")
            else:
                data = pybase64.b64encode(step["content"].encode()).decode()
                await self.desktop.action("write_file", path=step["path"], data=data)
        await self.rest()

    def ours_fields(self, name: str) -> dict[str, Any]:
        """What the agent adds to this action (agent/computer.py: the observe fields its model takes)."""
        model = ACTION_MODELS[name]
        return {k: v for k, v in self.computer.observe.items() if k in model.model_fields}

    async def act(self, res: Result, fields: dict[str, Any]) -> str:
        """Run the action by the result's method; its frame."""
        sent = time.monotonic()
        if res.method == "ours":
            body = await self.desktop.action(res.action, **fields, **self.ours_fields(res.action))
            res.act_ms = (time.monotonic() - sent) * 1000
            res.settle_ms = body.get("settledMs")
            res.settled, res.drawn = body.get("settled"), body.get("drawn")
            evidence = body.get("evidence")
            if isinstance(evidence, dict) and isinstance(evidence.get("screenChanged"), bool):
                res.claim = evidence["screenChanged"]
            res.answer = {k: v for k, v in body.items() if k != "data"}
            frame = str((body.get("data") or {}).get("image") or "")
            if not frame:
                res.error = "the answer carries no frame"
            return frame
        await self.desktop.action(res.action, **fields)
        answered = time.monotonic()
        res.act_ms = (answered - sent) * 1000
        if res.method == "frames":

            async def shoot() -> str:  # the agent's _frame
                return await self.shot(self.width)

            within = self.settings.settle_timeout_ms / 1000
            interval = self.settings.settle_interval_ms / 1000
            frame = (await settle(shoot, within=within, interval=interval)).frame
        else:
            await asyncio.sleep(SLEEP_BASELINE)
            frame = await self.shot(self.width)
        res.settle_ms = (time.monotonic() - answered) * 1000
        return frame

    async def run_one(self, index: int, label: str, group: str, act: Act) -> Result:
        res = Result(self.load, index, label, group, act["action"], method_of(index, self.every))
        before = self.state
        fields = {k: v for k, v in substitute(act, self.home).items() if k != "action"}
        frame = ""
        sent = time.monotonic()
        try:
            frame = await self.act(res, fields)
        except DesktopClientError as exc:
            res.error = exc.message[:300]
        after = await self.rest()
        res.rested, res.blink, res.rest_s = after.rested, after.blink, after.seconds
        last = self.drawings.last_between(sent, after.since)
        res.draw_ms = None if last is None else (last - sent) * 1000
        res.changed = before.keys.isdisjoint(after.keys)
        if res.claim is not None:
            res.claim_true = res.claim == res.changed
        if frame:
            res.frame_true = self.key(frame) in after.small
            if not res.frame_true:
                rested = next(iter(after.small.values()))
                res.frame_diff_pixels, res.frame_diff_box = diff(frame, rested)
                self.save_frames(res, frame, rested)
        return res

    def save_frames(self, res: Result, frame: str, rested: str) -> None:
        if self.frames_dir is None:
            return
        self.frames_dir.mkdir(parents=True, exist_ok=True)
        stem = f"{res.load}-{res.index:03d}-{res.method}"
        (self.frames_dir / f"{stem}-answered.png").write_bytes(pybase64.b64decode(frame))
        (self.frames_dir / f"{stem}-rested.png").write_bytes(pybase64.b64decode(rested))


async def run_corpus(
    box: Sandbox, load: str, rows: list[tuple[int, Row]], every: int, frames: Path | None
) -> list[Result]:
    bench = Bench(box, load, every, frames)
    results: list[Result] = []
    try:
        group = None
        for index, (label, grp, act) in rows:
            if grp != group:
                group = grp
                await bench.start_group(grp)
            try:
                res = await bench.run_one(index, label, grp, act)
            except Exception as exc:  # logged per action; the run goes on from a screen at rest
                res = Result(load, index, label, grp, act["action"], method_of(index, every))
                res.error = f"{type(exc).__name__}: {exc}"
                with contextlib.suppress(Exception):
                    await bench.rest()
            if res.error:
                print(f"  [{index}] {label}: {res.error}", flush=True)
            results.append(res)
        await bench.desktop.reset()
    finally:
        await bench.close()
        if not bench.drawings.server_clock:
            print("  (drawing times are the times read: the server's stamps were not this clock)")
    return results


# ------------------------------------------------------------------------------------------ report


def pct(values: list[float], p: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, max(0, round(p / 100 * (len(s) - 1))))]


def share(flags: list[bool]) -> str:
    return f"{100 * sum(flags) / len(flags):.1f} %" if flags else "-"


def ms(values: list[float]) -> str:
    return f"{pct(values, 50):.0f} / {pct(values, 95):.0f}" if values else "-"


def report(load: str, note: str, results: list[Result], wall: float, every: int) -> None:
    print(f"\nload {load} ({note}): {len(results)} actions in {wall:.0f} s", flush=True)
    if not results:
        return
    judged = [r for r in results if r.rested and not r.error]
    if every > 0:
        print(f"  one action in {every} ran a baseline instead of ours (frames and sleep750 in turn)")
    print(
        f"  left out: {sum(not r.rested for r in results)} whose screen did not rest within {REST_MAX:g} s, "
        f"{sum(bool(r.error) for r in results)} errors; rested blinking: {sum(r.blink for r in judged)}"
    )
    head = (
        "method",
        "actions",
        "frame truth",
        "evidence truth",
        "nothing-changed truth (n)",
        "settle p50/p95 ms",
    )
    print(f"  {head[0]:<9}{head[1]:>8}{head[2]:>13}{head[3]:>16}{head[4]:>27}{head[5]:>20}")
    for method in METHODS:
        mine = [r for r in judged if r.method == method]
        if not mine:
            continue
        claims = [r for r in mine if r.claim is not None]
        nothing = [r for r in claims if r.claim is False]
        n_nothing = f"{share([bool(r.claim_true) for r in nothing])} ({len(nothing)})" if nothing else "-"
        settles = [r.settle_ms for r in mine if r.settle_ms is not None]
        print(
            f"  {method:<9}{len(mine):>8}{share([bool(r.frame_true) for r in mine]):>13}"
            f"{share([bool(r.claim_true) for r in claims]):>16}{n_nothing:>27}{ms(settles):>20}"
        )
    for method in METHODS:
        untrue = [r for r in judged if r.method == method and r.frame_true is False]
        if untrue:
            small = sum(r.frame_diff_pixels < SMALL_DIFF for r in untrue)
            print(f"  {method}: {len(untrue)} untrue frames, {small} of them off by < {SMALL_DIFF} pixels")
    ours = [r for r in judged if r.method == "ours"]
    order = [g for _, g, _ in CORPUS]
    groups = sorted({r.group for r in ours}, key=order.index)
    by_group = ", ".join(
        f"{g} {sum(bool(r.frame_true) for r in ours if r.group == g)}/{sum(r.group == g for r in ours)}"
        for g in groups
    )
    print(f"  ours, true frames by group: {by_group}")
    if any(r.settled is not None for r in ours):
        drawn = {flag: sum(r.drawn is flag for r in ours) for flag in (True, False)}
        said = f"drawn true {drawn[True]}, false {drawn[False]}" if sum(drawn.values()) else "no drawn field"
        print(f"  ours: settled false {sum(r.settled is False for r in ours)}; {said}")
    typing = [r for r in ours if r.group == "terminal" and r.action in TYPING and r.draw_ms is not None]
    if typing:
        draw = [r.draw_ms for r in typing if r.draw_ms is not None]
        settles = [r.settle_ms for r in typing if r.settle_ms is not None]
        ratio = pct(settles, 50) / pct(draw, 50) if settles else float("nan")
        print(
            f"  terminal typing, ours (n={len(typing)}): drawn by (last drawing from the send) p50/p95 "
            f"{ms(draw)} ms, settledMs p50/p95 {ms(settles)} ms: settle/draw p50 {ratio:.2f}x (target "
            f"<= 1.5x); true frames {share([bool(r.frame_true) for r in typing])}"
        )


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    ap.add_argument("--load", choices=[*LOADS, "all"], default="all")
    ap.add_argument("--limit", type=int, default=0, help="the first N actions of the corpus (0: all)")
    ap.add_argument("--group", action="append", help="only this group of the corpus (repeatable)")
    ap.add_argument(
        "--baseline-every", type=int, default=3, help="every Nth action runs a baseline (0: none)"
    )
    ap.add_argument("--checkout", type=Path, help="a checkout of Deskpilot to run the sandbox from")
    ap.add_argument("--out", type=Path, help="write every action's result here (JSON)")
    ap.add_argument("--frames", type=Path, help="save the answered and rested frames of untrue frames here")
    args = ap.parse_args()
    rows = list(enumerate(CORPUS))  # the index in the corpus decides the method, whatever is left out
    if args.group:
        rows = [r for r in rows if r[1][1] in args.group]
    if args.limit:
        rows = rows[: args.limit]
    loads = list(LOADS) if args.load == "all" else [args.load]
    observe = Computer(None, AgentSettings()).observe  # type: ignore[arg-type]
    print(
        f"settle truth: {len(rows)} actions, loads {', '.join(loads)}; sandbox from {CHECKOUT}; "
        f"{os.cpu_count()} CPUs; the agent's fields: {json.dumps(observe)}",
        flush=True,
    )
    everything: list[Result] = []
    for load in loads:
        started = time.monotonic()
        # the load first: the sandbox takes whatever runs before it as not its own
        with LOADS[load](LOAD_SECONDS) as note, sandbox(checkout=CHECKOUT) as box:
            results = asyncio.run(run_corpus(box, load, rows, args.baseline_every, args.frames))
        report(load, note, results, time.monotonic() - started, args.baseline_every)
        everything += results
    if args.out:
        args.out.write_text(json.dumps([asdict(r) for r in everything], indent=1))
        print(f"\nevery action's result: {args.out}")


if __name__ == "__main__":
    t = time.perf_counter()
    main()
    print(f"(bench took {time.perf_counter() - t:.0f} s)")
