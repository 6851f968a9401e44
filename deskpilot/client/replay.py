"""Replaying a trajectory (``GET /tasks/{id}/trajectory``) against a desktop, to reproduce a run or to
regression-test a desktop: each recorded action is sent again, and once the desktop shows what was recorded
after it, the next one; a step whose screen does not come to match its recorded frame within ``timeout``
diverges, and its recorded frame, the last one taken and a diff image are written out.

    deskpilot replay trajectory.zip --url http://127.0.0.1:9990 [--token T] [--timeout 5] [--out DIR]
                     [--mask x,y,width,height ...] [--threshold 32] [--tolerance 0.02]

Waiting, as Playwright's ``toHaveScreenshot`` retries: the action is sent settled and its answer carries a
frame at the recorded width (one request when it matches at once); until it matches, the screen is taken
again (``screenshot``), at growing intervals, until ``timeout`` seconds after the action's answer. Only the
last frame is judged. Frames are compared by tiles (``deskpilot.client.compare``). A step recorded as refused
(an error) passes when the desktop refuses it again. Every step that has a recorded frame is compared, a
``wait`` too; steps without one (file actions, refusals, frames left out of a capped archive) are counted
apart. Needs only the client (``pip install "deskpilot[client]"``: httpx and Pillow).
"""

from __future__ import annotations

import base64
import io
import tempfile
import time
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

from deskpilot.client.compare import (
    THRESHOLD,
    TOLERANCE,
    Box,
    Comparison,
    Rules,
    bounds,
    compare,
    diff_image,
)
from deskpilot.computer.actions import ACTION_MODELS, Looks
from deskpilot.computer.client import Desktop, DesktopClientError
from deskpilot.computer.geometry import SCREEN, Size

if TYPE_CHECKING:  # Pillow is the `client` extra's, imported where used (open_png): the CLI reads TIMEOUT
    from PIL import Image

TIMEOUT = 5.0  # seconds a step's screen has to match, from the action's answer
# no quietMs: the desktop's own settle for each action, as the agent asks by default, so the frame is taken as
# the recorded one was (a desktop that predates per-action settling waits for 100 ms of quiet)
SETTLE = {"maxMs": 3000}
POLL = (0.05, 0.5)  # the first pause between screenshots while waiting, and the longest


@dataclass
class Divergence:
    step: int
    action: dict[str, Any]
    changed: float  # share of the compared tiles that differ
    files: list[Path]  # recorded, replayed, diff (none when nowhere was asked with ``keep_going``)
    tiles: int = 0  # how many differ
    where: Box | None = None  # the bounding box of them, in screen pixels
    waited: float = 0.0  # seconds from the action's answer to the frame judged


@dataclass
class ReplayResult:
    steps: int
    replayed: int
    skipped: int  # marked ``"replay": false`` (a point given in a zoom)
    seconds: float
    divergence: Divergence | None = None  # the first step that diverged
    diverged: int = 0  # how many steps diverged (more than one only with ``keep_going``)
    compared: int = 0  # frames compared: every replayed step that has a recorded frame
    unframed: int = 0  # replayed steps with no recorded frame, so nothing to compare
    waited: int = 0  # steps whose screen matched only after waiting for it
    folder: Path | None = None  # where the divergence's frames are

    @property
    def passed(self) -> bool:
        return self.divergence is None


def load(archive: Path) -> tuple[dict[str, Any], list[dict[str, Any]], zipfile.ZipFile]:
    """The header, the steps and the open archive (for its frames)."""
    z = zipfile.ZipFile(archive)
    header, *steps = [orjson.loads(line) for line in z.read("trajectory.jsonl").splitlines() if line.strip()]
    return header, steps, z


def open_png(data: bytes) -> Image.Image:
    from PIL import Image

    return Image.open(io.BytesIO(data))


def _frame_of(body: dict[str, Any]) -> Image.Image | None:
    data = body.get("data")
    image = data.get("image") if isinstance(data, dict) else None
    return open_png(base64.b64decode(image)) if isinstance(image, str) else None


def run_step(desktop: Desktop, step: dict[str, Any], width: int | None) -> Image.Image | None:
    """Send the step's action; settled and with a frame ``width`` wide in its answer when one is to be
    compared and the action can carry it (an input action, ``wait``)."""
    action = dict(step["action"])
    name = action.pop("action")
    model = ACTION_MODELS.get(name)
    if width is not None and model is not None and issubclass(model, Looks):
        action |= {"settle": SETTLE, "screenshot": {"width": width}}
    elif width is not None and name == "screenshot":
        action["width"] = width
    return _frame_of(desktop.action(name, **action))


def _send(desktop: Desktop, step: dict[str, Any], width: int | None) -> Image.Image | None:
    """The step's frame; a refusal (4xx) is what a step recorded as an error should get again."""
    try:
        return run_step(desktop, step, width)
    except DesktopClientError as exc:
        if (step.get("outcome") or {}).get("error") and 400 <= exc.status < 500:
            return None
        raise


@dataclass
class Judged:
    comparison: Comparison
    frame: Image.Image
    waited: float  # seconds after the action's answer


def settle_on(
    desktop: Desktop, expected: Image.Image, first: Image.Image | None, rules: Rules, timeout: float
) -> Judged:
    """Compare frames with ``expected``, taking the screen again until one matches or ``timeout`` s have
    passed: the first that matches, else the last."""
    started, pause = time.monotonic(), POLL[0]
    frame = first or _frame_of(desktop.action("screenshot", width=expected.width))
    while True:
        if frame is None:  # never: a screenshot answers an image
            raise DesktopClientError("screenshot answered no image")
        comparison = compare(expected, frame, rules)
        waited = time.monotonic() - started
        if comparison.matched or waited >= timeout:
            return Judged(comparison, frame, waited)
        time.sleep(min(pause, timeout - waited))
        pause = min(pause * 2, POLL[1])
        frame = _frame_of(desktop.action("screenshot", width=expected.width))


def _folder(out: Path | None) -> Path:
    """``out``, or a new temporary folder: never the current directory unasked."""
    if out is None:
        return Path(tempfile.mkdtemp(prefix="deskpilot-replay-"))
    out.mkdir(parents=True, exist_ok=True)
    return out


def write_divergence(folder: Path, step: int, expected: Image.Image, judged: Judged) -> list[Path]:
    files = [folder / f"step-{step}-{kind}.png" for kind in ("recorded", "replayed", "diff")]
    expected.save(files[0])
    judged.frame.save(files[1])
    diff_image(judged.frame, judged.comparison).save(files[2])
    return files


def _where(comparison: Comparison, size: tuple[int, int], screen: Size) -> Box | None:
    """The bounding box of the differing tiles, in screen pixels."""
    if not comparison.regions:
        return None
    x0, y0, x1, y1 = bounds(comparison.regions)
    sx, sy = screen.width / size[0], screen.height / size[1]
    return round(x0 * sx), round(y0 * sy), round((x1 - x0) * sx), round((y1 - y0) * sy)


def replay(
    archive: Path,
    desktop: Desktop,
    tolerance: float = TOLERANCE,
    out: Path | None = None,
    keep_going: bool = False,
    *,
    timeout: float = TIMEOUT,
    threshold: int = THRESHOLD,
    masks: tuple[Box, ...] = (),
) -> ReplayResult:
    """Replay ``archive`` on ``desktop``; stops at the first divergence, whose frames go to ``out`` (a new
    temporary folder when None), unless ``keep_going``: then every step is sent, the first divergence is the
    one reported, and its frames are written only to an ``out`` given."""
    started = time.monotonic()
    header, steps, z = load(archive)
    screen = _screen(header)
    rules = Rules(threshold, tolerance, masks, screen)
    result = ReplayResult(len(steps), 0, 0, 0.0)
    with z:
        for step in steps:
            diverged = _replay_step(desktop, z, step, rules, timeout, result)
            if diverged is None:
                continue
            result.diverged += 1
            if result.divergence is None:
                result.divergence = _divergence(step, *diverged, screen)
                if out or not keep_going:
                    result.folder = _folder(out)
                    result.divergence.files = write_divergence(result.folder, step["step"], *diverged)
            if not keep_going:
                break
    result.seconds = time.monotonic() - started
    return result


def _screen(header: dict[str, Any]) -> Size:
    screen = header.get("screen")
    return Size(int(screen["width"]), int(screen["height"])) if isinstance(screen, dict) else SCREEN


def _replay_step(
    desktop: Desktop,
    z: zipfile.ZipFile,
    step: dict[str, Any],
    rules: Rules,
    timeout: float,
    result: ReplayResult,
) -> tuple[Image.Image, Judged] | None:
    """Replay one step, counted in ``result``: its recorded frame and the one judged when it diverged."""
    if not step.get("replay", True):
        result.skipped += 1
        return None
    recorded = step.get("frameAfter")
    expected = open_png(z.read(f"frames/{recorded}.png")) if recorded else None
    first = _send(desktop, step, expected.width if expected else None)
    result.replayed += 1
    if expected is None:
        result.unframed += 1
        return None
    judged = settle_on(desktop, expected, first, rules, timeout)
    result.compared += 1
    if judged.comparison.matched:
        result.waited += int(judged.frame is not first)
        return None
    return expected, judged


def _divergence(step: dict[str, Any], expected: Image.Image, judged: Judged, screen: Size) -> Divergence:
    c = judged.comparison
    where = _where(c, expected.size, screen)
    return Divergence(step["step"], step["action"], c.changed, [], len(c.differing), where, judged.waited)
