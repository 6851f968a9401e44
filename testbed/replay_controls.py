"""The desktops replay's negative controls are recorded and replayed on: the same steps on a desktop that
differs by one thing (a line of text, a dialog, a window moved, another file). tests/integration/client/
test_replay.py proves each fails; bench/replay.py counts them."""

from __future__ import annotations

import base64
import shlex
from collections.abc import Callable
from typing import Any

import orjson

from deskpilot.computer.client import Desktop
from deskpilot.tasks.trajectory import FORMAT, TrajectoryWriter

Prepare = Callable[[Desktop], None]
REST = {"quietMs": 500, "maxMs": 5000}  # a reference frame is the screen at rest

LINES = "printf 'alpha\\nbravo\\ncharlie\\n' > ~/lines.txt"
WINDOW = "xmessage -title 'Replay control' -geometry +600+300 'A window of the replay control'"
DIALOG = "xmessage -title Unexpected -geometry +900+520 'A dialog nobody expected'"
TERMINAL_STEPS: list[dict[str, Any]] = [
    {"action": "type_text", "text": "cat ~/lines.txt\n"},
    {"action": "wait", "duration": 300},
]
DESKTOP_STEPS: list[dict[str, Any]] = [
    {"action": "move_mouse", "coordinates": {"x": 960, "y": 760}},
    {"action": "wait", "duration": 300},
]


def launch(desktop: Desktop, command: str, title: str) -> None:
    """``command`` started apart from the desktop service's command (which would wait for it, holding its
    descriptors), once its window ``title`` shows."""
    start = "import subprocess, sys; subprocess.Popen(sys.argv[1:], start_new_session=True, stdin=-3, "
    start += "stdout=-3, stderr=-3)"
    desktop.command(f"python3 -c {shlex.quote(start)} {command}")
    shown = desktop.command(f"xdotool search --sync --onlyvisible --name {shlex.quote(title)}", 10)
    assert shown["exitCode"] == 0, shown


def terminal(lines: str = LINES) -> Prepare:
    """A terminal open, ``lines`` written to ~/lines.txt."""

    def prepare(desktop: Desktop) -> None:
        desktop.command(lines)
        desktop.application("terminal")

    return prepare


def desk(file: str = "alpha.txt", window: str = WINDOW, *more: tuple[str, str]) -> Prepare:
    """``file`` on the Desktop, the control window and ``more`` (command, title) windows shown."""

    def prepare(desktop: Desktop) -> None:
        desktop.command(f"touch ~/Desktop/{file}")
        for command, title in ((window, "Replay control"), *more):
            launch(desktop, command, title)

    return prepare


def record(desktop: Desktop, steps: list[dict[str, Any]], width: int = 1280) -> bytes:
    """A trajectory of ``steps`` acted on ``desktop``, each frame taken at rest, as the task service writes
    one (``deskpilot.tasks.trajectory``)."""
    desktop.action("wait", duration=0, settle=REST)
    writer, before = TrajectoryWriter(), None
    for number, action in enumerate(steps, 1):
        fields = {k: v for k, v in action.items() if k != "action"}
        body = desktop.action(action["action"], **fields, settle=REST, screenshot={"width": width})
        frame = writer.frame(base64.b64decode(body["data"]["image"]), number)
        line = {"step": number, "time": "", "actor": "api", "action": action, "outcome": {"error": False}}
        writer.step(
            orjson.dumps({**line, "frameBefore": before, "frameAfter": frame, "replay": True}), number
        )
        before = frame
    header = {"format": FORMAT, "task": None, "screen": {"width": 1920, "height": 1080}, "steps": len(steps)}
    return writer.close({**header, "truncated": None})
