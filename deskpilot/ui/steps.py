"""A task's steps as the task page shows them: the trajectory (``GET /tasks/{id}/trajectory``, the zip the
task service builds from the conversation) read into what ``_steps.html`` renders, each step with its
actor, its action as a readable line, its outcome, and the frames before and after it.

The frames are inlined as ``data:`` URIs, as the conversation's screenshots are: the view is fetched only when
the user opens it, and the archive is capped (``AGENT_TRAJECTORY_MAX_BYTES``).
"""

from __future__ import annotations

import base64
import io
import zipfile
from dataclasses import dataclass
from typing import Any

import orjson

from deskpilot.computer.tools import PREFIX
from deskpilot.ui.agent import AgentFailed
from deskpilot.ui.conversation import describe_tool_call

OUTCOME_CHARS = 300  # a file read's text can be long: the view shows its start


@dataclass
class StepView:
    number: int
    time: str
    actor: str
    action: str  # a readable line, e.g. "clicked left at (640, 400)"
    error: bool
    outcome: str
    before: str | None  # data: URI of the frame before the step, None when there is none
    after: str | None
    replay: bool


def _uri(archive: zipfile.ZipFile, frame: Any, cache: dict[str, str]) -> str | None:
    if not isinstance(frame, str) or not frame:
        return None
    if frame not in cache:
        try:
            png = archive.read(f"frames/{frame}.png")
        except KeyError:
            return None
        cache[frame] = "data:image/png;base64," + base64.b64encode(png).decode("ascii")
    return cache[frame]


def _step(archive: zipfile.ZipFile, line: dict[str, Any], cache: dict[str, str]) -> StepView:
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
        before=_uri(archive, line.get("frameBefore"), cache),
        after=_uri(archive, line.get("frameAfter"), cache),
        replay=line.get("replay", True) is not False,
    )


def steps_view(archive: bytes) -> dict[str, Any]:
    """The template's context: ``steps`` and ``truncated`` (the header's, or None)."""
    try:
        with zipfile.ZipFile(io.BytesIO(archive)) as zipped:
            header, *lines = [orjson.loads(line) for line in zipped.read("trajectory.jsonl").splitlines()]
            cache: dict[str, str] = {}
            steps = [_step(zipped, line, cache) for line in lines]
    except (zipfile.BadZipFile, KeyError, ValueError) as exc:
        raise AgentFailed(502, f"the task service's trajectory could not be read: {exc}") from exc
    return {"steps": steps, "truncated": header.get("truncated") if isinstance(header, dict) else None}
