"""A task's trajectory: what was done on the desktop, step by step, as one archive to download and replay.

``GET /tasks/{id}/trajectory`` answers a zip: ``trajectory.jsonl`` (a header line, then one line per step) and
``frames/<sha256>.png`` (each settled frame once, named by its content). A step is one desktop action of the
task's run: its time, its actor, the action as sent to ``POST /computer-use`` (with the ``space`` its
coordinates are in, so it replays as it was given), its outcome, and the frames before and after it.

This builds it from the task's conversation, where the agent keeps each ``computer_*`` call and the settled
frame it got back, so the agent's steps are recorded at no cost on the hot path. Actions that point into a
zoom (``inZoom``) carry no ``space`` to replay them in and are marked ``"replay": false``. The file actions
(``write_file``, ``read_file``) are steps too, without a frame: an image that ``read_file`` returned is the
file's, not the screen's. The other actors' input on the same desktop (API and MCP clients, a human on the
live view) comes from the desktop's journal (``journal_steps.py``), interleaved by time.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import io
import zipfile
from collections.abc import Sequence
from typing import Any

import orjson

from deskpilot.computer.geometry import SCREEN, png_size
from deskpilot.computer.tools import CHANGES_SCREEN, PREFIX
from deskpilot.taskapi.types import iso
from deskpilot.tasks.journal_steps import JournalStep
from deskpilot.tasks.models import Message, Task

FORMAT = "deskpilot-trajectory/1"


def _frame(blocks: list[dict[str, Any]]) -> bytes | None:
    for block in blocks:
        source = block.get("source") if block.get("type") == "image" else None
        if isinstance(source, dict) and source.get("media_type") == "image/png":
            try:
                return base64.b64decode(source.get("data") or "", validate=True)
            except (binascii.Error, ValueError):
                return None
    return None


def _text(blocks: list[dict[str, Any]]) -> str:
    return " ".join(str(b.get("text", "")) for b in blocks if b.get("type") == "text")


def _shows_screen(tool: str) -> bool:
    """Whether the tool's result carries a frame of the screen (an input action's, or a screenshot)."""
    name = tool.removeprefix(PREFIX)
    return name in CHANGES_SCREEN or name == "screenshot"


def _action(name: str, args: dict[str, Any], frame: bytes | None) -> tuple[dict[str, Any], bool]:
    """The request the agent's call became, and whether it can be replayed as it is."""
    action: dict[str, Any] = {"action": name.removeprefix(PREFIX), **args}
    zoomed = action.pop("inZoom", None) is True
    size = png_size(frame) if frame else None
    if not zoomed and size is not None and size != SCREEN and ("coordinates" in action or "path" in action):
        action["space"] = {"width": size.width}
    return action, not zoomed


class TrajectoryWriter:
    """The archive, in memory: frames by content, steps in order, within ``max_bytes`` (frames and step lines
    together). A frame that would pass the cap is left out, and every later one (their steps keep
    ``frameAfter: null``, replayed without a comparison); a step line that would pass it ends the archive.
    ``truncated`` says so in the header."""

    def __init__(self, max_bytes: int | None = None) -> None:
        self.buffer = io.BytesIO()
        self.zip = zipfile.ZipFile(self.buffer, "w", zipfile.ZIP_STORED)  # PNGs do not compress further
        self.frames: set[str] = set()
        self.lines: list[bytes] = []
        self.max_bytes = max_bytes
        self.size = 0
        self.frames_left_out = 0
        self.steps_left_out = 0
        self.truncated_at: int | None = None  # the first step that lost its frame or was left out

    def _fits(self, more: int, step: int) -> bool:
        if self.truncated_at is None and (self.max_bytes is None or self.size + more <= self.max_bytes):
            self.size += more
            return True
        self.truncated_at = self.truncated_at or step
        return False

    def frame(self, png: bytes | None, step: int = 0) -> str | None:
        if png is None:
            return None
        name = hashlib.sha256(png).hexdigest()[:32]
        if name not in self.frames:
            if not self._fits(len(png), step):
                self.frames_left_out += 1
                return None
            self.frames.add(name)
            self.zip.writestr(f"frames/{name}.png", png)
        return name

    def step(self, line: bytes, step: int) -> bool:
        """Add a step's line; False once the archive is full (the step and every later one left out)."""
        if self.steps_left_out or (self.max_bytes is not None and self.size + len(line) > self.max_bytes):
            self.steps_left_out += 1
            self.truncated_at = self.truncated_at or step
            return False
        self.size += len(line)
        self.lines.append(line)
        return True

    def truncation(self) -> dict[str, int] | None:
        if self.truncated_at is None:
            return None
        return {
            "atStep": self.truncated_at,
            "maxBytes": self.max_bytes or 0,
            "framesLeftOut": self.frames_left_out,
            "stepsLeftOut": self.steps_left_out,
        }

    def close(self, header: dict[str, Any]) -> bytes:
        self.zip.writestr("trajectory.jsonl", b"\n".join([orjson.dumps(header), *self.lines]) + b"\n")
        self.zip.close()
        return self.buffer.getvalue()


def trajectory(
    task: Task,
    messages: list[Message],
    max_bytes: int | None = None,
    journal: Sequence[JournalStep] = (),
) -> bytes:
    """The zip of ``task``'s trajectory from its conversation (oldest message first) and the ``journal``
    steps of others on its desktop, interleaved by time, within ``max_bytes``."""
    writer = TrajectoryWriter(max_bytes)
    steps = _agent_steps(writer, messages)
    steps += [
        {
            "time": other.time,
            "actor": other.actor,
            "action": other.action,
            "outcome": other.outcome,
            "frameAfter": writer.frame(other.frame),
            "replay": True,
        }
        for other in journal
    ]
    steps.sort(key=lambda step: str(step["time"]))  # stable: the agent's steps keep their order
    before: str | None = None
    written = 0
    for number, step in enumerate(steps, 1):
        line = {"step": number, "time": step["time"], "actor": step["actor"], "action": step["action"]}
        line |= {"outcome": step["outcome"], "frameBefore": before, "frameAfter": step["frameAfter"]}
        if writer.step(orjson.dumps({**line, "replay": step["replay"]}), number):
            written += 1
        before = step["frameAfter"] or before
    header = {
        "format": FORMAT,
        "task": {"id": task.id, "description": task.description, "status": task.status},
        "screen": {"width": SCREEN.width, "height": SCREEN.height},
        "steps": written,
        "truncated": writer.truncation(),
    }
    return writer.close(header)


def _agent_steps(writer: TrajectoryWriter, messages: list[Message]) -> list[dict[str, Any]]:
    """The agent's ``computer_*`` calls with their results, unnumbered; their frames go into ``writer`` as
    they come (so no more than one decoded frame is held at a time)."""
    calls: dict[str, tuple[str, dict[str, Any], str]] = {}  # tool_use id -> (name, args, time)
    steps: list[dict[str, Any]] = []
    for message in messages:
        for block in message.content or []:
            if block.get("type") == "tool_use" and str(block.get("name", "")).startswith(PREFIX):
                calls[str(block.get("id"))] = (
                    block["name"],
                    dict(block.get("input") or {}),
                    iso(message.created_at) or "",
                )
            elif block.get("type") == "tool_result" and str(block.get("tool_use_id")) in calls:
                name, args, when = calls.pop(str(block["tool_use_id"]))
                raw = block.get("content")
                content: list[dict[str, Any]] = raw if isinstance(raw, list) else []
                png = _frame(content) if _shows_screen(name) else None
                action, replayable = _action(name, args, png)
                steps.append(
                    {
                        "time": when,
                        "actor": "agent",
                        "action": action,
                        "outcome": {"error": bool(block.get("is_error")), "text": _text(content)},
                        "frameAfter": writer.frame(png, len(steps) + 1),
                        "replay": replayable,
                    }
                )
    return steps
