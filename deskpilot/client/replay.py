"""Replaying a trajectory (``GET /tasks/{id}/trajectory``) against a desktop, to reproduce a run or to
regression-test a desktop: each recorded action is sent again, settled, and its frame compared with the
recorded one; the replay stops at the first step whose frame differs beyond the tolerance and leaves the
recorded frame, the new one and a diff image (the differing pixels in red over a dimmed copy) beside it.

    deskpilot replay trajectory.zip --url http://127.0.0.1:9990 [--token T] [--tolerance 0.02] [--out DIR]

Frames are compared at the recorded size: the share of pixels whose colour moved by more than ``THRESHOLD``
levels in any channel must stay within ``tolerance`` (2 % by default: a clock or a blinking cursor moves
far fewer). A step whose recorded outcome was an error (a request the desktop refused) passes when the desktop
refuses it again. Needs only the client (``pip install "deskpilot[client]"``: httpx and Pillow).
"""

from __future__ import annotations

import base64
import io
import time
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
from PIL import Image, ImageChops

from deskpilot.computer.actions import OBSERVED_ACTIONS
from deskpilot.computer.client import Desktop, DesktopClientError

THRESHOLD = 32  # levels of 255: smaller moves are antialiasing, not a different screen


@dataclass
class Divergence:
    step: int
    action: dict[str, Any]
    changed: float  # share of the pixels that differ
    files: list[Path]  # recorded, replayed, diff


@dataclass
class ReplayResult:
    steps: int
    replayed: int
    skipped: int
    seconds: float
    divergence: Divergence | None = None  # the first step that diverged
    diverged: int = 0  # how many steps diverged (more than one only with ``keep_going``)

    @property
    def passed(self) -> bool:
        return self.divergence is None


def load(archive: Path) -> tuple[dict[str, Any], list[dict[str, Any]], zipfile.ZipFile]:
    """The header, the steps and the open archive (for its frames)."""
    z = zipfile.ZipFile(archive)
    header, *steps = [orjson.loads(line) for line in z.read("trajectory.jsonl").splitlines() if line.strip()]
    return header, steps, z


def changed_share(expected: Image.Image, got: Image.Image) -> float:
    if expected.size != got.size:
        return 1.0
    diff = ImageChops.difference(expected.convert("RGB"), got.convert("RGB")).convert("L")
    moved = sum(diff.point(lambda v: 255 if v > THRESHOLD else 0).histogram()[255:])
    return moved / (expected.width * expected.height)


def diff_image(expected: Image.Image, got: Image.Image) -> Image.Image:
    """The replayed frame dimmed, with every differing pixel in red."""
    base = got.convert("RGB").point(lambda v: v // 3)
    mask = ImageChops.difference(expected.convert("RGB"), got.convert("RGB")).convert("L")
    mask = mask.point(lambda v: 255 if v > THRESHOLD else 0)
    base.paste((255, 0, 0), mask=mask)
    return base


def _frame_of(body: dict[str, Any]) -> Image.Image | None:
    data = body.get("data")
    image = data.get("image") if isinstance(data, dict) else None
    return Image.open(io.BytesIO(base64.b64decode(image))) if isinstance(image, str) else None


def run_step(desktop: Desktop, step: dict[str, Any], size: tuple[int, int] | None) -> Image.Image | None:
    """Send the step's action, settled and with a frame at ``size`` when one is to be compared."""
    action = dict(step["action"])
    name = action.pop("action")
    if size is not None and name in OBSERVED_ACTIONS:  # their answer can carry the settled frame
        action |= {"settle": {"quietMs": 100, "maxMs": 3000}, "screenshot": {"width": size[0]}}
    elif size is not None and name == "screenshot":
        action["width"] = size[0]
    return _frame_of(desktop.action(name, **action))


def _replay_step(desktop: Desktop, step: dict[str, Any], expected: Image.Image | None) -> Image.Image | None:
    """The step's frame; a refusal (4xx) is what a step recorded as an error should get again."""
    try:
        return run_step(desktop, step, expected.size if expected else None)
    except DesktopClientError as exc:
        if (step.get("outcome") or {}).get("error") and 400 <= exc.status < 500:
            return None
        raise


def _write_divergence(
    step: dict[str, Any], expected: Image.Image, got: Image.Image, share: float, out: Path | None
) -> Divergence:
    folder = out or Path(f"replay-step-{step['step']}")
    folder.mkdir(parents=True, exist_ok=True)
    files = [folder / f"step-{step['step']}-{kind}.png" for kind in ("recorded", "replayed", "diff")]
    expected.save(files[0])
    got.save(files[1])
    diff_image(expected, got).save(files[2])
    return Divergence(step["step"], step["action"], share, files)


def replay(
    archive: Path,
    desktop: Desktop,
    tolerance: float = 0.02,
    out: Path | None = None,
    keep_going: bool = False,
) -> ReplayResult:
    """Replay ``archive`` on ``desktop``; stops at the first divergence, whose frames go to ``out``, unless
    ``keep_going`` (then every step is sent, the first divergence is the one reported, and its frames are
    written only to an ``out`` given)."""
    started = time.monotonic()
    _, steps, z = load(archive)
    result = ReplayResult(len(steps), 0, 0, 0.0)
    with z:
        for step in steps:
            if not step.get("replay", True):
                result.skipped += 1
                continue
            recorded = step.get("frameAfter")
            expected = Image.open(io.BytesIO(z.read(f"frames/{recorded}.png"))) if recorded else None
            got = _replay_step(desktop, step, expected)
            result.replayed += 1
            if expected is None or got is None:
                continue
            share = changed_share(expected, got)
            if share <= tolerance:
                continue
            result.diverged += 1
            if result.divergence is None and (out or not keep_going):
                result.divergence = _write_divergence(step, expected, got, share, out)
            elif result.divergence is None:  # nowhere asked to write its frames
                result.divergence = Divergence(step["step"], step["action"], share, [])
            if not keep_going:
                break
    result.seconds = time.monotonic() - started
    return result
