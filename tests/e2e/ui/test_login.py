"""The UI in Chromium with a token configured: the login page, the session cookie, and everything the UI
does through its proxy in the browser's name (the agent's API and events, the live desktop).

The task service and the desktop service are real and configured as the appliance configures them: the
agent with the token, the desktop with its digest only. The browser never holds the token after logging in:
it holds the session cookie, and the UI adds the token to what it forwards.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import httpx
import pytest
from playwright.sync_api import Browser, Page, expect

from deskpilot.config import DesktopSettings, SecuritySettings, TaskSettings, UISettings
from deskpilot.desktop.api import create_app as desktop_app
from deskpilot.security import SESSION_COOKIE, digest
from deskpilot.tasks.app import create_app as agent_app
from deskpilot.ui.server import create_app as ui_app
from testbed.net import ServerThread, free_port
from testbed.xvfb import Display

TOKEN = "e2e-ui-token-4f1c9a7d2b6e8f30"
BEARER = {"Authorization": f"Bearer {TOKEN}"}


@dataclass
class Stack:
    ui: str
    desktop: str
    agent: httpx.Client  # the agent's own API, with the token


@pytest.fixture
def stack(tmp_path, desktop_settings: DesktopSettings) -> Iterator[Stack]:
    agent_settings = TaskSettings(
        database_url=f"sqlite:///{tmp_path}/agent.db",
        worker_enabled=False,
        desktop_url=f"http://127.0.0.1:{free_port()}",
    )
    with pytest.MonkeyPatch.context() as env:
        env.setenv("DESKPILOT_TOKEN_SHA256", digest(TOKEN))  # the desktop user's service: the digest only
        desktop = desktop_app(desktop_settings)
        env.delenv("DESKPILOT_TOKEN_SHA256")
        env.setenv("DESKPILOT_TOKEN", TOKEN)
        agent = agent_app(agent_settings)
        with ServerThread(desktop) as d, ServerThread(agent) as a:
            settings = UISettings(tasks_url=a.url, desktop_url=d.url)
            with (
                ServerThread(ui_app(settings, SecuritySettings(token=TOKEN))) as ui,
                httpx.Client(base_url=a.url, headers=BEARER, timeout=10) as client,
            ):
                yield Stack(ui.url, d.url, client)


def log_in(page: Page, stack: Stack) -> None:
    """The task list sends a browser without a session to the login page; a wrong token is refused."""
    page.goto(stack.ui)
    expect(page).to_have_url(f"{stack.ui}/login?next=%2F")
    expect(page.locator("h1")).to_have_text("Log in")
    page.fill("#token", "not-the-token")
    page.click("#login button")
    expect(page.locator("#login-error")).to_contain_text("not the token")
    assert page.context.cookies() == []
    page.fill("#token", TOKEN)
    page.click("#login button")
    expect(page).to_have_url(f"{stack.ui}/")


def test_log_in_follow_a_task_take_over_hand_back_and_log_out(
    stack: Stack, page: Page, ui_display: Display
) -> None:
    sockets: list[str] = []
    page.on("websocket", lambda ws: sockets.append(ws.url))
    log_in(page, stack)

    (cookie,) = page.context.cookies()
    assert cookie["name"] == SESSION_COOKIE
    assert cookie["httpOnly"] is True and cookie["sameSite"] == "Strict" and cookie["path"] == "/"
    assert TOKEN not in cookie["value"]
    assert SESSION_COOKIE not in page.evaluate("document.cookie")  # out of scripts' reach

    # live updates over /api/ws: a task created elsewhere appears without a reload
    expect(page.locator("#live")).to_have_attribute("data-state", "up")
    page.evaluate("window.__sameDocument = true")
    task = stack.agent.post("/tasks", json={"description": "Tidy the desktop"}).json()
    row = page.locator(f'tr.task-row[data-id="{task["id"]}"]')
    expect(row).to_be_visible()
    assert page.evaluate("window.__sameDocument === true")

    # the task page, rendered by the UI from the agent with the token, and its live desktop
    row.locator("a").click()
    expect(page.locator("h1")).to_have_text("Tidy the desktop")
    screen = page.locator("#screen")
    expect(page.locator("#desktop-state")).to_have_text("live · view only")
    expect(screen).to_have_attribute("data-mode", "view")
    assert sockets[-1].endswith("/vnc/websockify"), sockets

    # take over: the view reconnects interactive, and the real pointer follows the browser's mouse
    page.click('button[data-action="takeover"]')
    expect(page.locator("#desktop-state")).to_have_text("live · you have control")
    expect(screen).to_have_attribute("data-mode", "interactive")
    assert sockets[-1].endswith("/vnc/websockify?interactive=1"), sockets
    page.wait_for_function("() => document.querySelector('#screen canvas')?.width === 1920")
    box = page.locator("#screen canvas").bounding_box()
    assert box is not None
    page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    page.mouse.move(box["x"] + box["width"] / 4, box["y"] + box["height"] / 4, steps=5)
    want = (1920 // 4, 1080 // 4)
    for _ in range(50):
        if all(abs(a - b) <= 8 for a, b in zip(ui_display.pointer(), want, strict=True)):
            break
        page.wait_for_timeout(100)
    assert all(abs(a - b) <= 8 for a, b in zip(ui_display.pointer(), want, strict=True)), ui_display.pointer()
    assert stack.agent.get(f"/tasks/{task['id']}").json()["control"] == "USER"

    # hand back: view only again, on a new connection
    page.click('button[data-action="resume"]')
    expect(page.locator("#desktop-state")).to_have_text("live · view only")
    expect(screen).to_have_attribute("data-mode", "view")
    assert sockets[-1].endswith("/vnc/websockify"), sockets
    assert stack.agent.get(f"/tasks/{task['id']}").json()["control"] == "ASSISTANT"

    # log out: the session ends, and the pages send the browser back to the login page
    page.click(".logout button")
    expect(page).to_have_url(f"{stack.ui}/login")
    assert page.context.cookies() == []
    page.goto(f"{stack.ui}/tasks/{task['id']}")
    expect(page).to_have_url(f"{stack.ui}/login?next=%2Ftasks%2F{task['id']}")


def test_wrong_tokens_make_the_browser_wait_and_a_logged_out_cookie_opens_nothing(
    stack: Stack, page: Page, browser: Browser
) -> None:
    page.goto(f"{stack.ui}/login")
    for _ in range(6):  # five free, the sixth makes this address wait 1 s
        page.fill("#token", "not-the-token")
        page.click("#login button")
        expect(page.locator("#login-error")).to_contain_text("not the token")
    page.fill("#token", TOKEN)  # too early: not even checked
    with page.expect_response(f"{stack.ui}/login") as answer:
        page.click("#login button")
    assert answer.value.status == 429 and answer.value.headers["retry-after"] == "1"
    expect(page.locator("#login-error")).to_contain_text("try again in 1 s")
    assert page.context.cookies() == []
    page.wait_for_timeout(1100)
    page.fill("#token", TOKEN)
    page.click("#login button")
    expect(page).to_have_url(f"{stack.ui}/")

    # a copy of the cookie (a shared computer, a stolen cookie) works until the session is logged out
    (cookie,) = page.context.cookies()
    assert cookie["expires"] > 0  # Max-Age: not a cookie that lives as long as the browser
    other = browser.new_context()
    try:
        other.add_cookies([cookie])  # type: ignore[list-item]  # a Cookie is a SetCookieParam at run time
        copy = other.new_page()
        copy.goto(f"{stack.ui}/tasks/new")
        expect(copy).to_have_url(f"{stack.ui}/tasks/new")
        page.click(".logout button")
        expect(page).to_have_url(f"{stack.ui}/login")
        # a page of its own: the open one may be sent to the login page by its own script as the session
        # ends, a navigation that would race this one
        later = other.new_page()
        later.goto(f"{stack.ui}/tasks/new")
        expect(later).to_have_url(f"{stack.ui}/login?next=%2Ftasks%2Fnew")
        assert later.request.get(f"{stack.ui}/api/tasks").status == 401
    finally:
        other.close()
