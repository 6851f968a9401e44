"""Computer: the fallbacks around the desktop service (no downscaling, unreachable desktop)."""

from __future__ import annotations

import base64
import io
from typing import Any

import pytest
from PIL import Image

from deskpilot.agent import computer as computer_mod
from deskpilot.agent.computer import MAX_ELEMENT_CHARS, Computer, DesktopDown, render
from deskpilot.computer.client import AsyncDesktop, DesktopClientError
from deskpilot.computer.geometry import png_size
from deskpilot.config import AgentSettings


def png_b64(w: int, h: int) -> str:
    out = io.BytesIO()
    Image.new("RGB", (w, h), (200, 10, 10)).save(out, format="PNG")
    return base64.b64encode(out.getvalue()).decode()


class OldDesktop(AsyncDesktop):
    """A desktop service that ignores the screenshot `width` field and fails `failures` times first."""

    def __init__(self, failures: int = 0, status: int = 503) -> None:
        self.failures, self.status = failures, status
        self.calls: list[tuple[str, dict[str, Any]]] = []

    async def action(self, action: str, **fields):
        self.calls.append((action, fields))
        if self.failures:
            self.failures -= 1
            raise DesktopClientError(f"{action} failed ({self.status})", self.status)
        if action == "screenshot":
            return {"success": True, "data": {"image": png_b64(1920, 1080)}}
        return {"success": True}


def calls(computer: Computer) -> list[tuple[str, dict[str, Any]]]:
    assert isinstance(computer.desktop, OldDesktop)
    return computer.desktop.calls


@pytest.mark.anyio
async def test_full_size_screenshots_are_scaled_here_when_the_desktop_does_not() -> None:
    c = Computer(OldDesktop(), AgentSettings(screenshot_width=1280))
    shot = await c.screenshot()
    assert png_size(base64.b64decode(shot)) == c.image
    assert calls(c) == [("screenshot", {"width": 1280})]


@pytest.mark.anyio
async def test_an_unavailable_desktop_is_retried_then_reported(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(computer_mod, "DOWN_RETRIES", (0.0, 0.0))
    ok = Computer(OldDesktop(failures=2), AgentSettings())
    assert (await ok.run("wait", {"duration": 1})).is_error is False
    down = Computer(OldDesktop(failures=10), AgentSettings())
    with pytest.raises(DesktopDown):
        await down.run("wait", {"duration": 1})
    assert len(calls(down)) == 3


@pytest.mark.anyio
async def test_a_refused_token_ends_the_run_at_once() -> None:
    refused = Computer(OldDesktop(failures=10, status=401), AgentSettings())
    with pytest.raises(DesktopDown, match="DESKPILOT_TOKEN"):
        await refused.run("wait", {"duration": 1})
    assert len(calls(refused)) == 1


@pytest.mark.anyio
async def test_a_refused_action_is_an_error_result_not_a_retry() -> None:
    c = Computer(OldDesktop(failures=1, status=400), AgentSettings())
    out = await c.run("type_keys", {"keys": ["ctrl"]})
    assert out.is_error and "400" in out.content[0]["text"]
    assert len(calls(c)) == 1


@pytest.mark.anyio
async def test_a_desktop_time_out_is_an_error_result_not_a_retry() -> None:
    c = Computer(OldDesktop(failures=1, status=504), AgentSettings())
    out = await c.run("application", {"application": "browser"})
    assert out.is_error and "504" in out.content[0]["text"]
    assert len(calls(c)) == 1


def element(role: str, name: str, x: int, **more: object) -> dict[str, object]:
    box = {"x": x, "y": 10, "width": 20, "height": 10}
    return {
        "role": role,
        "name": name,
        "states": ["showing", "sensitive"],
        "bounds": box,
        "children": [],
        **more,
    }


def test_elements_render_one_line_each_within_the_bound_in_characters() -> None:
    kids = [element("push button", f"button {i}", i) for i in range(400)]
    kids[0] = element("entry", "Location", 0, text="/home/user")
    kids[1] = element("push button", "hidden", 1, bounds=None)
    tree = {"root": {**element("frame", "Files", 0), "children": kids}, "capped": ["nodes"]}
    lines = render(tree).splitlines()
    assert lines[0].startswith("The focused window 'Files' (frame): 399 elements")
    assert lines[1] == "entry 'Location' holding '/home/user' (10, 15)"
    assert "'hidden'" not in "\n".join(lines)
    assert lines[-2].startswith(f"[{399 - (len(lines) - 3)} more not listed") and "nodes" in lines[-1]
    assert len("\n".join(lines[1:])) <= MAX_ELEMENT_CHARS + 200
    assert render({"root": None, "message": "no tree here"}) == "no tree here"
