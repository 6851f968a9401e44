"""The agent's ``elements`` tool through the real loop: the scripted model asks for the focused window's
controls in Geany (on a display of this module's own with the session's AT-SPI bus), clicks the File menu
at the centre the list gave, in its screenshot's pixels, and the next list shows the menu's items. The raw
``computer_accessibility`` tool is not offered."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from deskpilot.scripted import Answer, Request, ScriptedModel, tool
from testbed.agent_loop import Agent, desktop_action, loop_settings, serve_agent
from testbed.atspi import accessibility_bus
from testbed.desktop_files import private_files_dir
from testbed.timing import wait_until
from testbed.xvfb import managed_display
from tests.integration.desktop.conftest import serve

pytestmark = pytest.mark.timeout(240)

LINE = re.compile(r"^(?P<role>[a-z ]+) '(?P<name>[^']*)'.* \((?P<x>\d+), (?P<y>\d+)\)$", re.M)


@pytest.fixture(scope="module")
def geany_desktop() -> Iterator[str]:
    """The desktop service (a private home) on a display with an AT-SPI bus, Geany open and its tree up."""
    with (
        private_files_dir() as home,
        managed_display() as display,
        accessibility_bus(display, "user"),
        serve(display, home=home, files_dir=home, accessibility=True) as desktop,
    ):
        desktop.act(action="application", application="code_editor")

        def file_menu() -> bool:
            body = desktop_action(desktop.url, "accessibility", interactiveOnly=True).json()
            return "'File'" in repr(body.get("data"))

        wait_until(file_menu, 30, interval=0.2, what="Geany's File menu in its tree")
        yield desktop.url


@pytest.fixture
def geany_agent(tmp_path: Path, geany_desktop: str, scripted_llm: ScriptedModel) -> Iterator[Agent]:
    settings = loop_settings(tmp_path / "agent.db", geany_desktop, scripted_llm.base_url, tmp_path)
    with serve_agent(settings) as agent:
        yield agent


def last_result(request: Request) -> str:
    return str(request.tool_results()[-1]["content"])


def elements_of(request: Request) -> dict[tuple[str, str], tuple[int, int]]:
    """The elements tool's last list: (role, name) → centre."""
    found = LINE.finditer(last_result(request))
    return {(m["role"], m["name"]): (int(m["x"]), int(m["y"])) for m in found}


def test_the_model_lists_the_elements_and_clicks_one_at_the_centre_it_was_given(
    geany_agent: Agent, scripted_llm: ScriptedModel, geany_desktop: str
) -> None:
    def click_file(request: Request) -> Answer:
        assert "elements" in request.tool_names and "computer_accessibility" not in request.tool_names
        head = last_result(request).splitlines()[0]
        assert re.search(r"Geany.*\(frame\): \d+ elements.* about \d+ tokens", head), head
        x, y = elements_of(request)[("menu", "File")]
        assert 0 <= x < 1280 and 0 <= y < 720  # the model's pixels, not the screen's 1920x1080
        return tool("computer_click_mouse", coordinates={"x": x, "y": y}, button="left", clickCount=1)

    def menu_open(request: Request) -> Answer:
        assert ("menu item", "Save") in elements_of(request), last_result(request)
        return tool("computer_type_keys", keys=["Escape"])

    scripted_llm.play(
        [
            tool("elements"),
            click_file,
            tool("elements"),
            menu_open,
            tool("computer_accessibility"),  # not offered: refused as an unknown action
            tool("set_task_status", status="completed", description="Saw the File menu's items."),
        ]
    )
    done = geany_agent.wait(geany_agent.create("Open Geany's File menu")["id"], timeout=120)
    assert done["status"] == "COMPLETED", (done.get("error"), scripted_llm.errors)
    assert not scripted_llm.errors
    results = [b for m in done["messages"] for b in m["content"] if b["type"] == "tool_result"]
    listed = [str(r["content"]) for r in results if "elements, centres" in str(r["content"])]
    assert len(listed) == 2  # each list is in the step's stored message, its size in tokens said
    assert results[4]["is_error"] and "Unknown action 'accessibility'" in str(results[4]["content"])


def test_a_tree_too_big_is_cut_and_says_so(
    geany_agent: Agent, scripted_llm: ScriptedModel, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("deskpilot.agent.computer.MAX_ELEMENT_LINES", 3)

    def cut(request: Request) -> Answer:
        text = last_result(request)
        assert len(elements_of(request)) == 3 and "more not listed" in text, text
        return tool("set_task_status", status="completed", description="cut")

    scripted_llm.play([tool("elements"), cut])
    done = geany_agent.wait(geany_agent.create("List the controls")["id"], timeout=60)
    assert done["status"] == "COMPLETED", (done.get("error"), scripted_llm.errors)
