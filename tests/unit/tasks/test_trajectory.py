"""The trajectory archive built from a conversation: every desktop action a step (file actions too, with no
frame), each frame stored once, an image a file read returned never taken for the screen."""

from __future__ import annotations

import base64
import io
import zipfile
from datetime import UTC, datetime
from typing import Any

import orjson
from PIL import Image

from deskpilot.tasks.models import Message, Task
from deskpilot.tasks.trajectory import trajectory

WHEN = datetime(2026, 11, 26, tzinfo=UTC)


def png(colour: tuple[int, int, int], size: tuple[int, int] = (1280, 720)) -> str:
    out = io.BytesIO()
    Image.new("RGB", size, colour).save(out, "PNG")
    return base64.b64encode(out.getvalue()).decode()


def image(data: str) -> dict[str, Any]:
    return {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": data}}


def call(n: int, name: str, **args: Any) -> dict[str, Any]:
    return {"type": "tool_use", "id": f"c{n}", "name": f"computer_{name}", "input": args}


def result(n: int, *blocks: dict[str, Any], error: bool = False) -> dict[str, Any]:
    return {"type": "tool_result", "tool_use_id": f"c{n}", "content": list(blocks), "is_error": error}


def text(said: str) -> dict[str, Any]:
    return {"type": "text", "text": said}


def conversation(*pairs: tuple[dict[str, Any], dict[str, Any]]) -> list[Message]:
    messages = []
    for use, answer in pairs:
        messages.append(Message(role="ASSISTANT", content=[use], created_at=WHEN))
        messages.append(Message(role="USER", content=[answer], created_at=WHEN))
    return messages


def steps_of(archive: bytes) -> tuple[dict[str, Any], list[dict[str, Any]], list[str]]:
    with zipfile.ZipFile(io.BytesIO(archive)) as z:
        header, *steps = [orjson.loads(line) for line in z.read("trajectory.jsonl").splitlines()]
        return header, steps, sorted(n for n in z.namelist() if n.startswith("frames/"))


def task() -> Task:
    return Task(id="t1", description="do it", status="COMPLETED")


def test_file_actions_and_errors_are_steps_and_a_read_image_is_not_a_frame() -> None:
    red = png((255, 0, 0))
    messages = conversation(
        (call(1, "click_mouse", coordinates={"x": 10, "y": 20}), result(1, text("Done."), image(red))),
        (call(2, "write_file", path="todo.txt", data="eAo="), result(2, text("Wrote todo.txt."))),
        (call(3, "read_file", path="~/shot.png"), result(3, image(png((0, 0, 255), (40, 30))))),
        (call(4, "type_keys", keys=["nope"]), result(4, text("Invalid arguments: keys"), error=True)),
        (call(5, "paste_text", text="hi"), result(5, text("Done."), image(red))),
    )
    header, steps, frames = steps_of(trajectory(task(), messages))
    assert header["steps"] == 5 and header["task"]["id"] == "t1"
    assert [s["action"]["action"] for s in steps] == [
        "click_mouse",
        "write_file",
        "read_file",
        "type_keys",
        "paste_text",
    ]
    assert steps[0]["action"]["space"] == {"width": 1280}
    assert steps[1]["action"] == {"action": "write_file", "path": "todo.txt", "data": "eAo="}
    assert steps[2]["frameAfter"] is None and "space" not in steps[2]["action"]  # the file's image
    assert steps[2]["frameBefore"] == steps[0]["frameAfter"]
    assert steps[3]["outcome"] == {"error": True, "text": "Invalid arguments: keys"}
    assert steps[4]["frameAfter"] == steps[0]["frameAfter"] and len(frames) == 1  # each frame once
    assert all(s["replay"] for s in steps)
