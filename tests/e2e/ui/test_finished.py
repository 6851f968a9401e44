"""A finished task's page tells the truth: its result as text (not JSON), on first render and live, and no
take-over or hand-back (the API refuses a take-over of a finished task). The task service runs with its
worker and an executor that finishes when told to, so the page sees the task end while it is open."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator

import httpx
import pytest
from playwright.sync_api import Browser, Page, expect

from deskpilot.config import TaskSettings, UISettings
from deskpilot.taskapi.types import TaskStatus
from deskpilot.tasks.app import create_app as agent_app
from deskpilot.tasks.executor import TaskContext
from deskpilot.ui.server import create_app as ui_app
from testbed.browser import PageErrors
from testbed.net import ServerThread, free_port
from testbed.timing import wait_until

RESULT = {"description": "Saved the report as ~/Documents/report.pdf (3 pages)."}


class FinishWhenTold:
    """Runs until the test sets ``finish``, then completes with RESULT."""

    def __init__(self) -> None:
        self.finish = threading.Event()

    async def execute(self, task_id: str, ctx: TaskContext) -> None:
        await asyncio.to_thread(self.finish.wait, 60)
        await ctx.update(status=TaskStatus.COMPLETED, result=RESULT)


@pytest.fixture
def executor() -> FinishWhenTold:
    return FinishWhenTold()


@pytest.fixture
def agent(tmp_path, desktop_url: str, executor: FinishWhenTold) -> Iterator[tuple[str, httpx.Client]]:
    settings = TaskSettings(
        database_url=f"sqlite:///{tmp_path}/agent.db",
        desktop_url=f"http://127.0.0.1:{free_port()}",
        desktop_files_dir=str(tmp_path),
        poll_seconds=30.0,
    )
    with (
        ServerThread(agent_app(settings, executor=executor)) as tasks,
        ServerThread(ui_app(UISettings(tasks_url=tasks.url, desktop_url=desktop_url))) as ui,
        httpx.Client(base_url=tasks.url, timeout=10) as client,
    ):
        yield ui.url, client
        executor.finish.set()  # a run still waiting ends with the test


def expect_finished(page: Page) -> None:
    expect(page.locator("#task-status .badge")).to_have_text("Completed")
    expect(page.locator("#task-result")).to_have_text(RESULT["description"])
    for control in ("takeover", "resume"):
        expect(page.locator(f'button[data-action="{control}"]')).to_be_hidden()
    expect(page.locator("#control-hint")).to_be_hidden()
    expect(page.locator("#you-control")).to_be_hidden()
    expect(page.locator('button[data-action="rerun"]')).to_be_visible()


def test_a_finished_task_shows_its_result_as_text_and_offers_no_take_over(
    agent: tuple[str, httpx.Client], executor: FinishWhenTold, browser: Browser
) -> None:
    ui, client = agent
    task = client.post("/tasks", json={"description": "Write the report"}).json()
    wait_until(lambda: client.get(f"/tasks/{task['id']}").json()["status"] == "IN_PROGRESS")
    page = browser.new_page()
    errors = PageErrors(page)
    page.goto(f"{ui}/tasks/{task['id']}")
    expect(page.locator("#live")).to_have_attribute("data-state", "up")
    expect(page.locator("#task-result")).to_be_hidden()
    page.click('button[data-action="takeover"]')  # a human holds control when the task ends
    expect(page.locator('button[data-action="resume"]')).to_be_visible()

    executor.finish.set()
    expect_finished(page)  # live
    assert client.get(f"/tasks/{task['id']}").json()["result"] == RESULT
    assert client.post(f"/tasks/{task['id']}/takeover").status_code == 400  # what the page no longer offers

    page.reload()
    expect_finished(page)  # first render
    assert "{" not in page.locator("#task-result").inner_text()
    errors.check()
    page.close()
