"""The whole flow through the UI in Chromium, everything real but the model: the task service with its
worker and the agent loop, the desktop service on the test Xvfb (with x11vnc behind its /vnc), and the
scripted OpenAI-compatible model (deskpilot.scripted) playing the model.

create with an upload -> the task appears without reload -> the model's messages stream in (text,
screenshots, actions) -> it asks a question (NEEDS_HELP) -> the reply reaches the model -> take over
(the agent waits, the live view takes input) -> hand back (the agent goes on) -> cancel.
"""

from __future__ import annotations

import os
import time
import uuid
import zipfile
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import orjson
import pytest
from playwright.sync_api import Browser, FilePayload, Locator, Page, expect

from deskpilot.config import UISettings
from deskpilot.scripted import Answer, Request, ScriptedModel, text, tool
from deskpilot.ui.server import create_app as ui_app
from testbed.agent_loop import loop_settings, serve_agent
from testbed.browser import PageErrors
from testbed.net import ServerThread

DOCS = Path(__file__).resolve().parents[3] / "docs"


@pytest.fixture(scope="module")
def llm() -> Iterator[ScriptedModel]:
    with ScriptedModel().serve() as server:
        yield server


def wait_until(check, timeout: float = 30.0, what: str = "condition"):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def cursor(desktop_url: str) -> tuple[int, int]:
    data = httpx.post(f"{desktop_url}/computer-use", json={"action": "cursor_position"}).json()["data"]
    return data["x"], data["y"]


def flow_script(notes: str, files_dir: Path, the_task: Callable[[], dict]) -> list:
    """The model's side of the flow: read the upload, act, ask; after the answer, wait for the human to take
    over, then to cancel."""

    def read_the_upload(req: Request) -> Answer:
        assert f"{files_dir}/{notes}" in "\n".join(req.text_of("user")), "the upload is announced"
        return Answer(text="Let me read the file first.", calls=[("computer_read_file", {"path": notes})])

    def ask(req: Request) -> Answer:
        assert "buy milk" in str(req.tool_results()), "the file's text reached the model"
        return text("Which name should the new file have?")

    def after_the_answer_wait_for_takeover(req: Request) -> Answer:
        assert "Call it shopping.txt" in "\n".join(req.text_of("user")), "the reply reached the model"
        wait_until(lambda: the_task()["control"] == "USER", what="the human to take over")
        return tool("computer_move_mouse", coordinates={"x": 100, "y": 100})

    def wait_for_cancel(req: Request) -> Answer:
        assert "A human had control" in str(req.tool_results()[-1]["content"])
        wait_until(lambda: the_task()["status"] == "CANCELLED", what="the human to cancel")
        return text("stopped")

    return [
        read_the_upload,
        tool("computer_application", application="terminal"),
        tool("computer_type_text", text=f"cat {files_dir}/{notes}\n"),
        tool("computer_click_mouse", coordinates={"x": 640, "y": 400}, button="left", clickCount=1),
        ask,
        after_the_answer_wait_for_takeover,
        wait_for_cancel,
    ]


def create_with_upload(page: Page, ui_url: str, notes: str) -> Locator:
    """Create the task through the form with the notes attached; its row appears without a reload."""
    page.goto(ui_url)
    expect(page.locator("#live")).to_have_attribute("data-state", "up")
    page.evaluate("window.__sameDocument = true")
    expect(page.locator("#model option")).to_have_text(["scripted · local"])
    page.fill("#description", "Make a shopping list file from my notes")
    page.set_input_files(
        "#files", files=[FilePayload(name=notes, mimeType="text/plain", buffer=b"buy milk\n")]
    )
    page.click("#create")
    row = page.locator("tr.task-row", has_text="Make a shopping list file from my notes")
    expect(row).to_be_visible()
    assert page.evaluate("window.__sameDocument === true"), "the list was reloaded"
    return row


def check_the_conversation(page: Page, notes: str, files_dir: Path) -> Locator:
    """The conversation so far, streamed and rendered, and the live desktop beside it, view only."""
    conversation = page.locator("#conversation")
    expect(conversation).to_contain_text(f"{files_dir}/{notes}")
    expect(conversation.locator(".action")).to_contain_text(
        [
            f"read file {notes}",
            "switched to terminal",
            f'typed "cat {files_dir}/{notes}\\n"',
            "clicked left at (640, 400)",
        ]
    )
    expect(conversation.locator(".shot img").first).to_be_visible()
    expect(conversation.locator(".msg-agent").last).to_contain_text("Which name should the new file have?")
    expect(page.locator("#task-status .badge")).to_have_text("Needs help")
    expect(page.locator("#reply-label")).to_contain_text("needs your help")
    expect(page.locator("#desktop-state")).to_have_text("live · view only")
    page.wait_for_function(
        "() => { const c = document.querySelector('#screen canvas'); return c && c.width === 1920; }"
    )
    return conversation


def test_create_follow_answer_take_over_hand_back_and_cancel(
    tmp_path, browser: Browser, desktop_url: str, desktop_files: Path, llm: ScriptedModel
) -> None:
    notes = f"notes-{uuid.uuid4().hex[:6]}.txt"
    agent_http: list[httpx.Client] = []

    def the_task() -> dict:
        (task,) = agent_http[0].get("/tasks").json()
        return task

    llm.play(flow_script(notes, desktop_files, the_task))
    settings = loop_settings(tmp_path / "agent.db", desktop_url, llm.base_url, desktop_files)
    with (
        serve_agent(settings) as agent,
        ServerThread(ui_app(UISettings(tasks_url=str(agent.client.base_url), desktop_url=desktop_url))) as ui,
    ):
        agent_http.append(agent.client)
        page: Page = browser.new_page(viewport={"width": 1600, "height": 1000})
        errors = PageErrors(page)

        row = create_with_upload(page, ui.url, notes)
        assert the_task()["model"] == "local/scripted"
        # the worker picks it up at once: the row follows
        settled = wait_until(
            lambda: (t := the_task())["status"] in ("NEEDS_HELP", "FAILED", "CANCELLED") and t,
            90,
            "a question",
        )
        assert settled["status"] == "NEEDS_HELP", (settled["error"], llm.errors)
        expect(row.locator(".status")).to_have_text("Needs help")

        row.locator("a").click()
        page.evaluate("window.__sameDocument = true")
        conversation = check_the_conversation(page, notes, desktop_files)

        # -- answer: the task runs again and the model gets the answer
        page.fill("#reply-text", "Call it shopping.txt")
        page.click("#reply button")
        expect(conversation.locator(".msg-user").last).to_contain_text("Call it shopping.txt")
        expect(page.locator("#task-status .badge")).to_have_text("Running", timeout=30_000)
        expect(page.locator(".working")).to_be_visible()

        # -- take over: the agent's next action waits; the live view takes input
        before = cursor(desktop_url)
        page.click('button[data-action="takeover"]')
        expect(page.locator("#desktop-state")).to_have_text("live · you have control")
        expect(page.locator("#you-control")).to_be_visible()
        expect(page.locator(".working")).to_be_hidden()
        # the model's next action is shown as proposed ...
        expect(conversation.locator(".action").last).to_have_text("moved the mouse to (100, 100)")
        time.sleep(0.5)
        assert cursor(desktop_url) == before, "the agent acted while the human had control"  # ... not run

        # -- hand back: the action runs, the model hears that a human had control
        page.click('button[data-action="resume"]')
        expect(page.locator("#desktop-state")).to_have_text("live · view only")
        expect(conversation.locator(".result-text", has_text="A human had control")).to_have_count(1)
        assert cursor(desktop_url) == (150, 150)  # model (100, 100) on 1280x720 -> screen (150, 150)
        if os.environ.get("UI_SCREENSHOT"):  # UI_SCREENSHOT=1 refreshes the README's picture
            page.screenshot(path=str(DOCS / "ui-task.png"))

        # -- cancel while it runs
        expect(page.locator("#task-status .badge")).to_have_text("Running")
        page.click('button[data-action="cancel"]')
        expect(page.locator("#task-status .badge")).to_have_text("Cancelled")
        expect(page.locator('button[data-action="rerun"]')).to_be_visible()
        wait_until(lambda: len(llm.requests) >= 5, what="the model's last request")
        assert the_task()["status"] == "CANCELLED"
        assert page.evaluate("window.__sameDocument === true"), "the task page was reloaded"
        assert not llm.errors, llm.errors
        # -- its trajectory downloads from the page: the steps the agent took, with their frames
        with page.expect_download() as download:
            page.click("#trajectory")
        with zipfile.ZipFile(download.value.path()) as z:
            steps = [orjson.loads(line) for line in z.read("trajectory.jsonl").splitlines()][1:]
        assert {"action": "move_mouse", "coordinates": {"x": 100, "y": 100}} in [
            {k: v for k, v in s["action"].items() if k != "space"} for s in steps
        ]
        errors.check()
        page.close()


def test_a_task_for_review_is_marked_complete_from_its_page(
    tmp_path, browser: Browser, desktop_url: str, desktop_files: Path, llm: ScriptedModel
) -> None:
    llm.play([tool("set_task_status", status="needs_review", description="Check the draft")])
    settings = loop_settings(tmp_path / "agent.db", desktop_url, llm.base_url, desktop_files)
    with (
        serve_agent(settings) as agent,
        ServerThread(ui_app(UISettings(tasks_url=str(agent.client.base_url), desktop_url=desktop_url))) as ui,
    ):
        page: Page = browser.new_page()
        errors = PageErrors(page)
        task = agent.create("Draft a reply to the newest email")
        page.goto(f"{ui.url}/tasks/{task['id']}")
        expect(page.locator("#task-status .badge")).to_have_text("Needs review", timeout=30_000)
        expect(page.locator("#conversation .action").last).to_have_text(
            "set the task to needs review: Check the draft"
        )
        expect(page.locator("#reply-label")).to_contain_text("asks for a review")
        page.click('button[data-action="complete"]')
        expect(page.locator("#task-status .badge")).to_have_text("Completed")
        assert agent.task(task["id"])["status"] == "COMPLETED"
        errors.check()
        page.close()
