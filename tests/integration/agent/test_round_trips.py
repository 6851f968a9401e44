"""One round trip per step: a tool call that changes the screen acts, settles and brings back the
model-sized frame in a single request to the real desktop, where the frame-comparing loop took three or
more."""

from __future__ import annotations

import asyncio

import httpx
import pybase64

from deskpilot.agent.computer import Computer
from deskpilot.computer.client import AsyncDesktop
from deskpilot.computer.geometry import png_size
from deskpilot.config import AgentSettings

CLICK = {"coordinates": {"x": 10, "y": 700}, "button": "left", "clickCount": 1}


def run_step(
    desktop_url: str, legacy: bool, action: str = "click_mouse", args: dict | None = None
) -> tuple[list[str], str]:
    async def go() -> tuple[list[str], str]:
        sent: list[str] = []

        async def count(request: httpx.Request) -> None:
            sent.append(request.content.decode())

        client = httpx.AsyncClient(base_url=desktop_url, timeout=30, event_hooks={"request": [count]})
        # HTTP, whose requests the hook counts (a step is one message on the action channel as well)
        async with AsyncDesktop(desktop_url, client=client, channel=False) as desktop:
            computer = Computer(desktop, AgentSettings())
            if legacy:  # what a desktop that ignores the fields leaves the agent to do
                computer.observe = {}
            outcome = await computer.run(action, dict(CLICK if args is None else args))
        image = next(b for b in outcome.content if b.get("type") == "image")
        return sent, str(image["source"]["data"] if "source" in image else image["data"])

    return asyncio.run(go())


def test_a_wait_step_is_one_request_too(desktop_url: str) -> None:
    sent, frame = run_step(desktop_url, legacy=False, action="wait", args={"duration": 50})
    assert len(sent) == 1, sent
    assert '"settle":{"maxMs":3000}' in sent[0] and "evidence" not in sent[0], sent  # the desktop's timing
    assert png_size(pybase64.b64decode(frame[:44])).width == AgentSettings().screenshot_width


def test_a_step_is_one_request(desktop_url: str) -> None:
    sent, frame = run_step(desktop_url, legacy=False)
    assert len(sent) == 1, sent
    assert '"settle":{"maxMs":3000}' in sent[0] and '"evidence":true' in sent[0], sent  # the desktop's timing
    assert png_size(pybase64.b64decode(frame[:44])).width == AgentSettings().screenshot_width


def test_the_frame_comparing_loop_took_three_or_more(desktop_url: str) -> None:
    sent, _ = run_step(desktop_url, legacy=True)
    assert len(sent) >= 3, sent
