"""A trajectory's steps as a person reads them (``GET /tasks/{id}/trajectory``: ``trajectory.jsonl`` and
``frames/<id>.png``, docs/evaluation.md): each with its actor, its action as a readable line, its outcome, and
the frames before and after it, linked as the caller wants: the UI's task page inlines them as ``data:``
URIs (``deskpilot.ui.steps``), the evaluation's HTML report writes them beside it
(``deskpilot.evaluation.report``)."""

from __future__ import annotations

import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import orjson

from deskpilot.computer.describe import describe_tool_call
from deskpilot.computer.tools import PREFIX

OUTCOME_CHARS = 300  # a file read's text can be long: the view shows its start

FrameLink = Callable[[str, bytes], str]  # a frame's id and PNG -> what an <img src> says


@dataclass
class StepView:
    number: int
    time: str
    actor: str
    action: str  # a readable line, e.g. "clicked left at (640, 400)"
    error: bool
    outcome: str
    before: str | None  # what links the frame before the step (FrameLink), None when there is none
    after: str | None
    replay: bool


def _src(archive: zipfile.ZipFile, frame: Any, cache: dict[str, str], link: FrameLink) -> str | None:
    if not isinstance(frame, str) or not frame:
        return None
    if frame not in cache:
        try:
            png = archive.read(f"frames/{frame}.png")
        except KeyError:
            return None
        cache[frame] = link(frame, png)
    return cache[frame]


def _step(archive: zipfile.ZipFile, line: dict[str, Any], cache: dict[str, str], link: FrameLink) -> StepView:
    action = dict(line.get("action") or {})
    name = str(action.pop("action", "?"))
    action.pop("space", None)
    outcome = line.get("outcome") or {}
    text = str(outcome.get("text") or "")
    return StepView(
        number=int(line.get("step") or 0),
        time=str(line.get("time") or ""),
        actor=str(line.get("actor") or "agent"),
        action=describe_tool_call(PREFIX + name, action),
        error=bool(outcome.get("error")),
        outcome=text if len(text) <= OUTCOME_CHARS else text[:OUTCOME_CHARS] + "…",
        before=_src(archive, line.get("frameBefore"), cache, link),
        after=_src(archive, line.get("frameAfter"), cache, link),
        replay=line.get("replay", True) is not False,
    )


def read_steps(archive: zipfile.ZipFile, link: FrameLink) -> dict[str, Any]:
    """``steps`` and ``truncated`` (the header's, or None) of an open trajectory, each frame linked once by
    ``link``; KeyError or ValueError when it is not one."""
    header, *lines = [orjson.loads(line) for line in archive.read("trajectory.jsonl").splitlines()]
    cache: dict[str, str] = {}
    steps = [_step(archive, line, cache, link) for line in lines]
    return {"steps": steps, "truncated": header.get("truncated") if isinstance(header, dict) else None}
