"""The UI says clearly when the agent is not there, and recovers by itself when it comes back."""

from __future__ import annotations

from playwright.sync_api import expect

from deskpilot.config import TaskSettings, UISettings
from deskpilot.tasks.app import create_app as agent_app
from deskpilot.ui.server import create_app
from testbed.browser import PageErrors
from testbed.firefox import Firefox
from testbed.net import ServerThread, free_port


def test_task_list_says_the_agent_is_down_and_which_variable_points_at_it(browser) -> None:
    dead = f"http://127.0.0.1:{free_port()}"
    with ServerThread(create_app(UISettings(tasks_url=dead, desktop_url=dead))) as ui:
        page = browser.new_page()
        errors = PageErrors(page)
        page.goto(ui.url)
        notice = page.locator(".notice.error")
        expect(notice).to_contain_text("The task service is not answering")
        expect(notice).to_contain_text(dead)
        expect(notice).to_contain_text("UI_TASKS_URL")
        expect(page.locator("#live")).to_have_attribute("data-state", "down")
        expect(page.locator("#live")).to_contain_text("not reachable")
        page.goto(f"{ui.url}/tasks/some-id")
        expect(page.locator(".notice.error")).to_contain_text("The task service is not answering")
        errors.check()
        page.close()


def test_firefox_runs_the_pages_scripts_too() -> None:
    dead = f"http://127.0.0.1:{free_port()}"
    with ServerThread(create_app(UISettings(tasks_url=dead, desktop_url=dead))) as ui:
        ff = Firefox()
        try:
            ff.goto(ui.url)
            # The live light is set by the page's module script, so this proves the modules ran.
            live = "document.querySelector('#live')"
            assert "not reachable" in ff.wait_for(f"{live}.dataset.state === 'down' && {live}.textContent")
            assert "UI_TASKS_URL" in ff.js("document.querySelector('.notice.error').innerText")
            assert ff.errors == []
        finally:
            ff.close()


def test_page_shown_while_the_agent_was_down_recovers_when_it_starts(tmp_path, browser) -> None:
    port = free_port()
    agent = TaskSettings(
        database_url=f"sqlite:///{tmp_path}/agent.db",
        worker_enabled=False,
        desktop_url=f"http://127.0.0.1:{free_port()}",
    )
    with ServerThread(create_app(UISettings(tasks_url=f"http://127.0.0.1:{port}"))) as ui:
        page = browser.new_page()
        errors = PageErrors(page)
        page.goto(ui.url)
        expect(page.locator(".notice.error")).to_contain_text("The task service is not answering")
        expect(page.locator("#live")).to_have_attribute("data-state", "down")
        with ServerThread(agent_app(agent), port=port):
            expect(page.locator("#task-rows")).to_contain_text("No tasks yet", timeout=20_000)
            expect(page.locator(".notice.error")).to_have_count(0)
            expect(page.locator("#live")).to_have_attribute("data-state", "up")
        errors.check()
        page.close()
