"""The journal: every action that reached the desktop, whoever sent it, with its outcome and the frame after.

``Controller.perform`` records each action it runs (actor ``agent``, ``api`` or ``mcp``); the VNC bridge
records a human's input on an interactive connection, translated into the same actions (``human.py``,
actor ``human``). An entry is the request as ``POST /computer-use`` takes it, never a screenshot's bytes.
``POST /command`` and ``POST /reset`` are recorded by their routes (``Journal.recording``): the command's text
with its exit code and time (never its output), the reset with what it closed and removed.

Recording is an append to a bounded deque on the request path; the request is turned into JSON only when
read. Frames are taken off the request path, once no input came for ``DESKTOP_JOURNAL_SETTLE_MS``: an
input action whose answer carried a PNG keeps that one (hashed then, not while the answer is being sent);
for a burst whose last action had none, one full-screen PNG is captured once the screen is quiet too, and
becomes that action's ``frameAfter``. Both happen on one worker thread of the journal's. Frames are stored
once each, named by content, in a store bounded by count and bytes; an evicted frame answers 404.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import hashlib
import itertools
import logging
import threading
import time
from collections import OrderedDict, deque
from collections.abc import Awaitable, Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from deskpilot.computer import actions
from deskpilot.config import DesktopSettings
from deskpilot.desktop.capture import Image
from deskpilot.errors import DesktopError

log = logging.getLogger(__name__)

ACTORS = ("agent", "api", "mcp", "human")
MAX_ERROR_CHARS = 300  # an outcome's error, shortened: the journal is a record, not a log
SETTLE_MAX_MS = 2000  # a frame is taken after this even if the screen is still changing
ENTRY_BYTES, POINT_BYTES = 400, 120  # about what an entry and a point of a path hold
MAX_PENDING = 32  # frames answers carried, held until their burst ends (older ones are not kept)

Capture = Callable[[], bytes]  # a full-screen PNG, in a worker thread
Settle = Callable[[int, int], Awaitable[tuple[float, bool]]]  # (quiet ms, max ms) -> (waited, settled)


def iso(moment: float) -> str:
    """ISO 8601 UTC with milliseconds and a Z, as the task service writes times."""
    return datetime.fromtimestamp(moment, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def request_of(action: actions.Action | dict[str, Any]) -> dict[str, Any]:
    """The request an entry stands for; a written file's content is left out (only its size is kept)."""
    if isinstance(action, dict):
        return action
    body = action.model_dump(mode="json", exclude_none=True, exclude_defaults=True, by_alias=True)
    if isinstance(action, actions.WriteFile):
        body.pop("data", None)
        body["dataBytes"] = action.data_bytes
    return body


def weight(action: actions.Action | dict[str, Any]) -> int:
    """About what an entry holds, in bytes: its text, path and keys (a text or a path may be long)."""
    fields = action if isinstance(action, dict) else action.__dict__  # getattr of a missing field is slow
    text, path, keys = fields.get("text") or fields.get("command"), fields.get("path"), fields.get("keys")
    size = ENTRY_BYTES + (len(text) if isinstance(text, str) else 0)
    return size + POINT_BYTES * (len(path) if isinstance(path, list) else 0) + 16 * len(keys or ())


def failure(exc: BaseException) -> tuple[str, str]:
    """The status and the error a request that raised ``exc`` is recorded (and logged) with."""
    if isinstance(exc, DesktopError):
        return str(exc.status), exc.message
    if isinstance(exc, asyncio.CancelledError):
        return "cancelled", "the client went away"
    return "500", f"{type(exc).__name__}: {exc}"


def outcome_of(status: str, error: str | None = None) -> dict[str, Any]:
    """``{"ok": true}``, or the status ("400", "503", "cancelled" ...) and the error, short."""
    if status == "ok":
        return {"ok": True}
    code: int | str = int(status) if status.isdigit() else status
    return {"ok": False, "status": code, "error": (error or "")[:MAX_ERROR_CHARS]}


@dataclass(slots=True)
class Entry:
    seq: int
    time: float
    actor: str
    task: str | None
    action: actions.Action | dict[str, Any]  # a model from a request, a dict from the human's input
    outcome: dict[str, Any]
    input: bool  # an input action (computer.actions.OBSERVED_ACTIONS): the ones a replay sends again
    frame_after: str | None = None
    weight: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "seq": self.seq,
            "time": iso(self.time),
            "actor": self.actor,
            "task": self.task,
            "action": request_of(self.action),
            "outcome": self.outcome,
            "input": self.input,
            "frameAfter": self.frame_after,
        }


def frame_id(png: bytes) -> str:
    """A frame's name: its content's SHA-256, as trajectories name their frames (tasks/trajectory.py)."""
    return hashlib.sha256(png).hexdigest()[:32]


class FrameStore:
    """PNG frames by content, oldest evicted first beyond ``max_frames`` or ``max_bytes``. Written from
    worker threads, read from the event loop."""

    def __init__(self, max_frames: int, max_bytes: int) -> None:
        self.max_frames, self.max_bytes = max_frames, max_bytes
        self._frames: OrderedDict[str, bytes] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()

    def put(self, png: bytes) -> str | None:
        """Store ``png`` (once) and return its id; None when it cannot be kept at all."""
        if len(png) > self.max_bytes or self.max_frames == 0:
            return None
        name = frame_id(png)
        with self._lock:
            if name in self._frames:
                self._frames.move_to_end(name)
                return name
            self._frames[name] = png
            self._bytes += len(png)
            while len(self._frames) > self.max_frames or self._bytes > self.max_bytes:
                _, old = self._frames.popitem(last=False)
                self._bytes -= len(old)
        return name

    def get(self, name: str) -> bytes | None:
        with self._lock:
            return self._frames.get(name)

    def usage(self) -> tuple[int, int]:
        with self._lock:
            return len(self._frames), self._bytes


class Journal:
    """The bounded record of actions; ``record`` is cheap and never waits."""

    def __init__(self, settings: DesktopSettings, capture: Capture, settle: Settle) -> None:
        self.enabled = settings.journal
        self.frames = FrameStore(settings.journal_frames, settings.journal_frame_bytes)
        self._entries: deque[Entry] = deque()
        self._max_entries, self._max_bytes = settings.journal_entries, settings.journal_entry_bytes
        self._bytes = 0  # what the entries kept weigh (``weight``)
        self._seq = 0
        self._capture, self._settle = capture, settle
        self._quiet_ms = settings.journal_settle_ms
        self._burst: Entry | None = None  # the newest input still waiting for its frame to be taken
        self._own: list[tuple[Entry, bytes]] = []  # inputs whose answer carried their frame, to store
        self._due = 0.0  # monotonic time the burst's frame may be taken at
        self._flusher: asyncio.Task[None] | None = None
        # one thread takes, hashes and stores frames, in the order they come: the store evicts the oldest,
        # and the journal never takes more than one core from the desktop's applications
        self._thread = ThreadPoolExecutor(1, thread_name_prefix="journal")

    def close(self) -> None:
        self._thread.shutdown(wait=False, cancel_futures=True)

    def record(
        self,
        actor: str,
        action: actions.Action | dict[str, Any],
        outcome: dict[str, Any],
        *,
        task: str | None = None,
        image: Image | None = None,
        at: float | None = None,
    ) -> Entry | None:
        """Append one entry (on the event loop) at ``at`` (epoch seconds, default now); its frame follows
        off the request path."""
        if not self.enabled:
            return None
        self._seq += 1
        if isinstance(action, actions.WriteFile):
            action = request_of(action)  # never hold the file's content
        name = action["action"] if isinstance(action, dict) else action.action
        entry = Entry(
            self._seq, at or time.time(), actor, task, action, outcome, name in actions.OBSERVED_ACTIONS
        )
        self._keep(entry)
        if entry.input and self.frames.max_frames:
            if image is not None and image.media_type == "image/png":
                self._own.append((entry, image.data))  # hashed and stored after the burst, not now
                del self._own[:-MAX_PENDING]
                self._burst = None  # the burst's last action has its frame
            else:
                self._burst = entry
            self._due = time.monotonic() + self._quiet_ms / 1000
            loop = asyncio.get_running_loop()
            if self._flusher is None or self._flusher.done() or self._flusher.get_loop() is not loop:
                self._flusher = loop.create_task(self._frames_after_burst())
        return entry

    @contextlib.contextmanager
    def recording(
        self, actor: str, action: dict[str, Any], task: str | None = None
    ) -> Iterator[dict[str, Any]]:
        """Record ``action``, a request other than an action's (``POST /command``, ``/reset``), once the
        block ends: its outcome is ``{"ok": true}`` with what the block put in the dict it is given, or the
        failure's status and error."""
        details: dict[str, Any] = {}
        status, error = "500", None
        try:
            yield details
            status = "ok"
        except BaseException as exc:  # a client that went away too (CancelledError)
            status, error = failure(exc)
            raise
        finally:
            outcome = outcome_of(status, error)
            self.record(actor, action, {**outcome, **details} if status == "ok" else outcome, task=task)

    def _keep(self, entry: Entry) -> None:
        entry.weight = weight(entry.action)
        self._entries.append(entry)
        self._bytes += entry.weight
        while len(self._entries) > self._max_entries or (self._bytes > self._max_bytes and self._entries):
            self._bytes -= self._entries.popleft().weight

    def page(self, since: int, limit: int, actors: frozenset[str] | None = None) -> dict[str, Any]:
        """Entries after ``since`` (a seq), at most ``limit``, of ``actors`` when given."""
        oldest = self._entries[0].seq if self._entries else self._seq + 1
        out: list[dict[str, Any]] = []
        last = since
        for entry in itertools.islice(self._entries, max(0, since + 1 - oldest), None):
            if len(out) >= limit:
                break
            last = entry.seq
            if actors is None or entry.actor in actors:
                out.append(entry.to_dict())
        frames, frame_bytes = self.frames.usage()
        return {
            "success": True,
            "entries": out,
            "next": last,  # ask again with since=next for the rest
            "oldest": oldest,  # entries before it were dropped (the journal keeps DESKTOP_JOURNAL_ENTRIES)
            "latest": self._seq,
            "frames": {"count": frames, "bytes": frame_bytes},
        }

    async def _in_thread(self, job: Callable[[], Any]) -> Any:
        return await asyncio.get_running_loop().run_in_executor(self._thread, job)

    def _store(self, own: list[tuple[Entry, bytes]]) -> None:
        # A copy made here, once the burst is over: keeping the answer's buffer instead would pin it among
        # the request path's frame buffers, whose next frames would then fault in fresh pages (measured, with
        # an arena per thread then: +0.75 ms per action with a 1280-wide frame, bench/journal.py).
        for entry, png in own:
            entry.frame_after = self.frames.put(memoryview(png).tobytes())

    async def _frames_after_burst(self) -> None:
        """Once no input came for the quiet time: store the frames answers carried, and take one for the
        burst's last action if it had none, once the screen is quiet too."""
        while True:
            wait = self._due - time.monotonic()
            if wait > 0:
                await asyncio.sleep(wait)
                continue
            own, self._own = self._own, []
            entry, self._burst = self._burst, None
            if entry is None and not own:
                return
            try:
                if own:
                    await self._in_thread(functools.partial(self._store, own))
                    own.clear()  # the answers' buffers go back now, not after the capture below
                if entry is None:
                    continue
                await self._settle(self._quiet_ms, SETTLE_MAX_MS)
                if self._burst is not None or self._own:  # more input meanwhile: the frame after it serves
                    continue
                entry.frame_after = await self._in_thread(lambda: self.frames.put(self._capture()))
            except Exception as exc:  # the display went away: the entry stays, without a frame
                log.debug("journal frame not taken", extra={"error": repr(exc)})
