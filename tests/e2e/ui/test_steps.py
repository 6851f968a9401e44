"""The task page's steps, in Chromium: everything real but the model (the agent loop on the test desktop, the
task service, the UI). A run of moves, a file write (no frame) and a refused action; the Steps view shows
each step with its actor, action, outcome and the frames before and after it, the frames those of the
task's trajectory."""

from __future__ import annotations

from pathlib import Path

from playwright.sync_api import Page, expect

from deskpilot.config import UISettings
from deskpilot.scripted import ScriptedModel, tool
from deskpilot.ui.server import create_app as ui_app
from testbed.agent_loop import loop_settings, serve_agent
from testbed.net import ServerThread


def ui_settings(agent_url: object, desktop_url: str) -> UISettings:
    return UISettings(tasks_url=str(agent_url), desktop_url=desktop_url)


def test_the_task_page_shows_the_trajectory_step_by_step(
    tmp_path: Path, page: Page, desktop_url: str, desktop_files: Path
) -> None:
    with ScriptedModel().serve() as llm:
        llm.play(
            [
                tool("computer_move_mouse", coordinates={"x": 200, "y": 150}),
                tool("computer_write_file", path=f"{tmp_path.name}-steps.txt", data="aGkK"),
                tool("computer_type_keys", keys=["no-such-key"]),
                tool("computer_move_mouse", coordinates={"x": 600, "y": 400}),
                tool("set_task_status", status="completed", description="moved"),
            ]
        )
        settings = loop_settings(tmp_path / "agent.db", desktop_url, llm.base_url, desktop_files)
        with (
            serve_agent(settings) as agent,
            ServerThread(ui_app(ui_settings(agent.client.base_url, desktop_url))) as ui,
        ):
            task = agent.wait(agent.create("Move the pointer and save a note")["id"])
            assert task["status"] == "COMPLETED", task
            page.goto(f"{ui.url}/tasks/{task['id']}")
            expect(page.locator("#steps-body .step")).to_have_count(0)  # fetched when opened
            page.click("#steps summary")
            steps = page.locator("#steps-body .step")
            expect(steps).to_have_count(4)

            first, write, refused, last = (steps.nth(n) for n in range(4))
            expect(first.locator(".step-number")).to_have_text("1")
            expect(first.locator(".step-actor")).to_have_text("agent")
            expect(first.locator(".step-action")).to_have_text("moved the mouse to (200, 150)")
            expect(first.locator(".step-outcome")).to_have_class("step-outcome ok")
            expect(first.locator(".frame-before .no-frame")).to_be_visible()  # nothing before the first
            expect(write.locator(".step-action")).to_have_text(f"wrote file {tmp_path.name}-steps.txt")
            expect(write.locator(".frame-after .no-frame")).to_be_visible()  # a file action has no frame
            expect(refused).to_have_class("step step-error")
            expect(refused.locator(".step-outcome")).to_contain_text("refused: ")
            expect(last.locator(".step-action")).to_have_text("moved the mouse to (600, 400)")

            # the frames are the trajectory's: the screen as the model saw it, 1280 wide, decoded
            after = first.locator(".frame-after img")
            after.scroll_into_view_if_needed()
            expect(after).to_have_js_property("naturalWidth", 1280)
            assert last.locator(".frame-before img").get_attribute("src") == after.get_attribute("src")
            # a frame zooms in and out on click
            last.locator(".frame-after .shot").click()
            expect(last.locator(".frame-after .shot")).to_have_class("shot zoomed")

            # closed and opened again, it is fetched again; an unknown task's steps are a clear error
            page.click("#steps summary")
            page.click("#steps summary")
            expect(steps).to_have_count(4)
            missing = page.request.get(f"{ui.url}/fragments/tasks/nope/steps")
            assert missing.status == 404 and "nope" in missing.json()["message"]
