"""The web UI in Debian's Chromium against the real task service (SQLite in a temp dir, no worker) and
the real desktop service's live view (x11vnc on the UI tests' own Xvfb).

Without a worker nothing changes a task's status but requests, so every change seen here was made by
the browser or by the test through the agent's own API, and must reach the page without a reload.
"""

from __future__ import annotations

import base64
import io
import re
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass

import httpx
import pytest
from PIL import Image
from playwright.sync_api import FilePayload, Page, expect

from deskpilot.config import TaskSettings, UISettings
from deskpilot.tasks.app import create_app as agent_app
from deskpilot.ui.server import create_app as ui_app
from testbed.firefox import Firefox
from testbed.net import ServerThread, free_port
from testbed.xvfb import Display

MAX_FILE = 200_000  # the agent's per-file upload limit in these tests


@dataclass
class Stack:
    ui: str
    agent: httpx.Client  # the agent's own API, for what "someone else" does


def agent_settings(tmp_path) -> TaskSettings:
    return TaskSettings(
        database_url=f"sqlite:///{tmp_path}/agent.db",
        worker_enabled=False,
        desktop_url=f"http://127.0.0.1:{free_port()}",
        poll_seconds=30.0,
        max_file_bytes=MAX_FILE,
    )


@pytest.fixture
def stack(tmp_path, desktop_url: str) -> Iterator[Stack]:
    with (
        ServerThread(agent_app(agent_settings(tmp_path))) as agent,
        ServerThread(ui_app(UISettings(tasks_url=agent.url, desktop_url=desktop_url))) as ui,
        httpx.Client(base_url=agent.url, timeout=10) as client,
    ):
        yield Stack(ui.url, client)


def live(page: Page) -> None:
    """Wait for the page's WebSocket to the agent (through the UI's /api/ws) to be open."""
    expect(page.locator("#live")).to_have_attribute("data-state", "up")
    page.evaluate("window.__sameDocument = true")


def assert_not_reloaded(page: Page) -> None:
    assert page.evaluate("window.__sameDocument === true"), "the page was reloaded"


# -------------------------------------------------------------------------------------- task list


def test_empty_list_and_missing_model_are_explained(stack: Stack, page: Page) -> None:
    page.goto(stack.ui)
    expect(page.locator("#task-rows")).to_contain_text("No tasks yet")
    notice = page.locator("#no-model")
    for variable in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "GEMINI_API_KEY", "OPENROUTER_API_KEY"):
        expect(notice).to_contain_text(variable)
    expect(notice).to_contain_text("AGENT_LLM_PROXY_URL")
    expect(notice).to_contain_text("AGENT_OPENAI_BASE_URL")  # a local OpenAI-compatible server (Ollama ...)
    expect(notice).to_contain_text("a task fails as soon as it starts")
    expect(page.locator("#model")).to_be_disabled()


def test_create_task_with_chosen_and_dropped_files_appears_without_reload(stack: Stack, page: Page) -> None:
    page.goto(stack.ui)
    live(page)
    page.fill("#description", "Total column B of sales.csv")
    page.set_input_files(
        "#files", files=[FilePayload(name="notes.txt", mimeType="text/plain", buffer=b"hello")]
    )
    # A real drop event carrying a file, as a drag from the file manager produces.
    drop = page.evaluate_handle(
        """() => {
            const dt = new DataTransfer();
            dt.items.add(new File(["a,b\\n1,2\\n"], "sales.csv", { type: "text/csv" }));
            return dt;
        }"""
    )
    page.dispatch_event("#dropzone", "dragenter", {"dataTransfer": drop})
    expect(page.locator("#dropzone")).to_have_class(re.compile(r"\bover\b"))
    page.dispatch_event("#dropzone", "drop", {"dataTransfer": drop})
    expect(page.locator("#file-list li")).to_have_count(2)
    page.select_option("#priority", "HIGH")
    page.click("#create")

    row = page.locator("tr.task-row", has_text="Total column B of sales.csv")
    expect(row).to_be_visible()
    expect(row.locator(".status")).to_have_text("Queued")
    expect(row.locator(".prio")).to_have_text("High")
    expect(page.locator("#task-count")).to_have_text("1 task")
    expect(page.locator("#file-list li")).to_have_count(0)  # the form is ready for the next task
    assert_not_reloaded(page)

    (task,) = stack.agent.get("/tasks").json()
    assert (task["priority"], task["type"]) == ("HIGH", "IMMEDIATE")
    files = stack.agent.get(f"/tasks/{task['id']}").json()["files"]
    assert sorted((f["name"], f["size"]) for f in files) == [("notes.txt", 5), ("sales.csv", 8)]


def test_scheduled_task_is_sent_with_its_time(stack: Stack, page: Page) -> None:
    page.goto(stack.ui)
    page.fill("#description", "Later, please")
    page.check("#later")
    page.fill("#scheduled-for", "2031-05-04T09:30")
    page.click("#create")
    row = page.locator("tr.task-row", has_text="Later, please")
    expect(row).to_contain_text("scheduled for")
    expect(row.locator(".status")).to_have_text("Scheduled")
    (task,) = stack.agent.get("/tasks").json()
    assert task["type"] == "SCHEDULED"
    assert task["scheduledFor"].startswith("2031-05-0")


def test_agent_errors_are_shown_on_the_form(stack: Stack, page: Page) -> None:
    page.goto(stack.ui)
    page.click("#create")
    expect(page.locator("#form-error")).to_have_text("Describe the task first.")
    page.fill("#description", "x")
    page.check("#later")
    page.fill("#scheduled-for", "")
    page.click("#create")
    expect(page.locator("#form-error")).to_contain_text("Pick a date and time")
    assert stack.agent.get("/tasks").json() == []


def test_list_follows_changes_made_elsewhere_and_keeps_its_filter(stack: Stack, page: Page) -> None:
    frames: list[str] = []
    page.on("websocket", lambda ws: ws.on("framereceived", lambda f: frames.append(str(f))))
    page.goto(f"{stack.ui}/?filter=active")
    live(page)
    t = stack.agent.post("/tasks", json={"description": "made by a script", "priority": "LOW"}).json()
    row = page.locator(f'tr.task-row[data-id="{t["id"]}"]')
    expect(row).to_contain_text("made by a script")
    stack.agent.post(f"/tasks/{t['id']}/messages", json={"content": "a message the list has no use for"})
    stack.agent.patch(f"/tasks/{t['id']}", json={"priority": "URGENT"})
    expect(row.locator(".prio")).to_have_text("Urgent")
    # the socket asked for task events only: the message (an agent's would carry a screenshot) never came
    assert any('"task_updated"' in f for f in frames) and not any('"new_message"' in f for f in frames)
    stack.agent.patch(f"/tasks/{t['id']}", json={"status": "CANCELLED"})
    expect(row).to_have_count(0)  # no longer active
    expect(page.locator("#task-rows")).to_contain_text("No tasks here")
    page.click('a[data-filter="failed"]')
    expect(row.locator(".status")).to_have_text("Cancelled")
    live(page)
    stack.agent.delete(f"/tasks/{t['id']}")
    expect(row).to_have_count(0)
    assert_not_reloaded(page)


# -------------------------------------------------------------------------------------- task page


def test_task_page_reply_takeover_hand_back_cancel_and_run_again(stack: Stack, page: Page) -> None:
    t = stack.agent.post("/tasks", json={"description": "Rename the screenshots by date"}).json()
    page.goto(stack.ui)
    page.click(f'tr.task-row[data-id="{t["id"]}"] a')
    expect(page.locator("h1")).to_have_text("Rename the screenshots by date")
    live(page)
    # The first USER message is the task itself.
    expect(page.locator("#conversation .msg-user")).to_have_count(1)

    page.fill("#reply-text", "Use ISO dates, please")
    page.click("#reply button")
    expect(page.locator("#conversation .msg-user").last).to_contain_text("Use ISO dates, please")
    expect(page.locator("#reply-text")).to_have_value("")

    # A message added by someone else streams in too.
    stack.agent.post(f"/tasks/{t['id']}/messages", json={"content": "and keep the originals"})
    expect(page.locator("#conversation .msg")).to_have_count(3)

    page.click('button[data-action="takeover"]')
    expect(page.locator("#you-control")).to_be_visible()
    expect(page.locator('button[data-action="resume"]')).to_be_visible()
    expect(page.locator('button[data-action="takeover"]')).to_be_hidden()
    expect(page.locator("#screen")).to_have_attribute("data-view-only", "false")
    assert stack.agent.get(f"/tasks/{t['id']}").json()["control"] == "USER"

    page.click('button[data-action="resume"]')
    expect(page.locator("#you-control")).to_be_hidden()
    expect(page.locator("#screen")).to_have_attribute("data-view-only", "true")
    assert stack.agent.get(f"/tasks/{t['id']}").json()["control"] == "ASSISTANT"

    page.click('button[data-action="cancel"]')
    expect(page.locator("#task-status .badge")).to_have_text("Cancelled")
    expect(page.locator('button[data-action="cancel"]')).to_be_hidden()
    expect(page.locator('button[data-action="takeover"]')).to_be_hidden()
    assert stack.agent.get(f"/tasks/{t['id']}").json()["status"] == "CANCELLED"

    page.click('button[data-action="rerun"]')
    expect(page.locator("#task-status .badge")).to_have_text("Queued")
    assert_not_reloaded(page)


def test_task_page_follows_status_changes_made_elsewhere(stack: Stack, page: Page) -> None:
    t = stack.agent.post("/tasks", json={"description": "watch me"}).json()
    page.goto(f"{stack.ui}/tasks/{t['id']}")
    live(page)
    stack.agent.patch(f"/tasks/{t['id']}", json={"priority": "URGENT"})
    expect(page.locator("#task-priority .badge")).to_have_text("Urgent")
    stack.agent.patch(f"/tasks/{t['id']}", json={"status": "CANCELLED"})
    expect(page.locator("#task-status .badge")).to_have_text("Cancelled")
    expect(page).to_have_title("Cancelled · watch me · Deskpilot")
    stack.agent.delete(f"/tasks/{t['id']}")
    expect(page.locator(".toast.error")).to_have_text("This task was deleted.")
    assert_not_reloaded(page)


def test_unknown_task_says_so(stack: Stack, page: Page) -> None:
    response = page.goto(f"{stack.ui}/tasks/nope")
    assert response is not None and response.status == 404
    expect(page.locator(".notice.error")).to_contain_text("Task with ID nope not found")


def test_the_agents_refusal_is_shown_on_the_form(stack: Stack, page: Page) -> None:
    page.goto(stack.ui)
    page.fill("#description", "with a file over the agent's limit")
    big = FilePayload(name="big.bin", mimeType="application/octet-stream", buffer=b"x" * (MAX_FILE + 1))
    page.set_input_files("#files", files=[big])
    page.click("#create")
    expect(page.locator("#form-error")).to_contain_text(f"big.bin is {MAX_FILE + 1} bytes")
    expect(page.locator("#create")).to_be_enabled()
    assert stack.agent.get("/tasks").json() == []


# ----------------------------------------------------------------------------------- live desktop


def screen_grid(desktop: str) -> list[list[int]]:
    """RGB of the real screen at GRID points, from the desktop service's own screenshot."""
    png = httpx.post(f"{desktop}/computer-use", json={"action": "screenshot"}, timeout=30).json()["data"][
        "image"
    ]
    image = Image.open(io.BytesIO(base64.b64decode(png))).convert("RGB")
    return [rgb(image, x, y) for x, y in GRID]


def rgb(image: Image.Image, x: int, y: int) -> list[int]:
    pixel = image.getpixel((x, y))
    assert isinstance(pixel, tuple), pixel
    return list(pixel)


GRID = [(x, y) for x in range(60, 1920, 240) for y in range(45, 1080, 180)]
CANVAS_GRID = """(points) => {
    const c = document.querySelector('#screen canvas');
    if (!c || c.width !== 1920) return null;
    const ctx = c.getContext('2d');
    return points.map(([x, y]) => Array.from(ctx.getImageData(x, y, 1, 1).data.slice(0, 3)));
}"""


def test_live_desktop_shows_the_screen_and_is_view_only_until_taken_over(
    stack: Stack, page: Page, ui_display: Display, desktop_url: str
) -> None:
    # Something to see on the screen: a blue window over the bare desktop.
    marker = ui_display.spawn(["xterm", "-bg", "#3366cc", "-geometry", "60x20+300+200"])
    t = stack.agent.post("/tasks", json={"description": "look at the desktop"}).json()
    page.goto(f"{stack.ui}/tasks/{t['id']}")
    expect(page.locator("#desktop-state")).to_have_text("live · view only")
    canvas = page.locator("#screen canvas")
    expect(canvas).to_be_visible()

    # The canvas shows the real screen (through /vnc/websockify on the UI's port): it matches the
    # desktop service's screenshot point for point, within the VNC encoding's loss.
    def mean_difference() -> float:
        seen = page.evaluate(CANVAS_GRID, GRID)
        if not seen:
            return 255.0
        truth = screen_grid(desktop_url)
        diffs = [abs(a - b) for p, q in zip(seen, truth, strict=True) for a, b in zip(p, q, strict=True)]
        return sum(diffs) / len(diffs)

    for _ in range(100):
        if (diff := mean_difference()) < 6:
            break
        page.wait_for_timeout(100)
    assert diff < 6, f"the canvas does not show the screen (mean difference {diff:.1f})"
    assert [51, 102, 204] in screen_grid(desktop_url), "the marker window is on the screen"

    box = canvas.bounding_box()
    assert box is not None
    subprocess.run(["xdotool", "mousemove", "5", "5"], env=ui_display.env, check=True)
    page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    page.mouse.click(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    page.wait_for_timeout(300)
    assert ui_display.pointer() == (5, 5), "a view-only viewer moved the remote pointer"

    page.click('button[data-action="takeover"]')
    expect(page.locator("#desktop-state")).to_have_text("live · you have control")
    page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    page.mouse.move(box["x"] + box["width"] / 4, box["y"] + box["height"] / 4, steps=5)
    want_x, want_y = 1920 // 4, 1080 // 4
    for _ in range(50):
        x, y = ui_display.pointer()
        if abs(x - want_x) <= 8 and abs(y - want_y) <= 8:
            break
        page.wait_for_timeout(100)
    assert abs(x - want_x) <= 8 and abs(y - want_y) <= 8, (x, y)

    page.click('button[data-action="resume"]')
    expect(page.locator("#desktop-state")).to_have_text("live · view only")
    marker.terminate()
    marker.wait(10)


# ------------------------------------------------------------------------------------------- Firefox


def test_firefox_creates_a_task_and_follows_it(stack: Stack) -> None:
    ff = Firefox()
    try:
        ff.goto(stack.ui)
        ff.wait_for("document.querySelector('#live').dataset.state === 'up'")
        ff.js(
            """(() => {
                const dt = new DataTransfer();
                dt.items.add(new File(["hi"], "from-firefox.txt", { type: "text/plain" }));
                document.querySelector('#dropzone').dispatchEvent(
                    new DragEvent('drop', { dataTransfer: dt, bubbles: true, cancelable: true }));
                document.querySelector('#description').value = 'made in Firefox';
                document.querySelector('#new-task').requestSubmit();
                return true;
            })()"""
        )
        ff.wait_for("document.querySelector('#task-rows').textContent.includes('made in Firefox')")
        (task,) = stack.agent.get("/tasks").json()
        files = stack.agent.get(f"/tasks/{task['id']}").json()["files"]
        assert [f["name"] for f in files] == ["from-firefox.txt"]

        ff.goto(f"{stack.ui}/tasks/{task['id']}")
        ff.wait_for("document.querySelector('#live').dataset.state === 'up'")
        ff.wait_for("document.querySelector('#screen canvas') !== null")
        stack.agent.post(f"/tasks/{task['id']}/messages", json={"content": "streamed to Firefox"})
        ff.wait_for("document.querySelector('#conversation').textContent.includes('streamed to Firefox')")
        stack.agent.patch(f"/tasks/{task['id']}", json={"status": "CANCELLED"})
        ff.wait_for("document.querySelector('#task-status .badge').textContent === 'Cancelled'")
        assert ff.errors == []
    finally:
        ff.close()


def test_new_task_page_opens_the_task_it_created_and_delete_returns_to_the_list(
    stack: Stack, page: Page
) -> None:
    page.goto(f"{stack.ui}/tasks/new")
    page.fill("#description", "From the new-task page")
    page.select_option("#priority", "LOW")
    page.click("#create")
    expect(page.locator("h1")).to_have_text("From the new-task page")
    expect(page.locator("#task-priority .badge")).to_have_text("Low")
    (task,) = stack.agent.get("/tasks").json()
    assert page.url.endswith(f"/tasks/{task['id']}")

    page.once("dialog", lambda dialog: dialog.accept())
    page.click('button[data-action="delete"]')
    page.wait_for_url(f"{stack.ui}/")
    expect(page.locator("#task-rows")).to_contain_text("No tasks yet")
    assert stack.agent.get("/tasks").json() == []
