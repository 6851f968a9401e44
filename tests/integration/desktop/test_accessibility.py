"""The accessibility action and the element of click_mouse and type_text, on a display of the module's own
with the session's AT-SPI bus, in the real applications (Geany, xfce4-terminal), over HTTP, MCP and the
client."""

from __future__ import annotations

import functools
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

from deskpilot.computer.client import Desktop as DesktopClient
from deskpilot.desktop import accessibility
from deskpilot.desktop.atspi import interactive
from testbed.atspi import accessibility_bus
from testbed.xvfb import managed_display
from tests.integration.desktop.conftest import Desktop, serve, stop_process, wait_for

pytestmark = pytest.mark.timeout(300)


@pytest.fixture(scope="module")
def seen(desktop_home: Path, files_dir: Path) -> Iterator[Desktop]:
    """The desktop service on a display of its own whose applications speak AT-SPI."""
    with (
        managed_display() as display,
        accessibility_bus(display, "user"),
        serve(display, home=desktop_home, files_dir=files_dir, accessibility=True) as desktop,
    ):
        yield desktop


def nodes(node: dict[str, Any] | None) -> Iterator[dict[str, Any]]:
    if node is None:
        return
    yield node
    for child in node["children"]:
        yield from nodes(child)


def tree(desktop: Desktop, **asked: Any) -> dict[str, Any]:
    data: dict[str, Any] = desktop.act(action="accessibility", **asked)["data"]
    return data


def find(
    desktop: Desktop, role: str, name: str | None = None, placed: bool = False, **asked: Any
) -> dict[str, Any]:
    """The first node of ``role`` (and ``name``) in the focused window's tree, waited for (``placed``: until
    it has its bounds on the screen, which a page's elements get once it has loaded and been laid out)."""

    def look() -> dict[str, Any] | None:
        found = (n for n in nodes(tree(desktop, **asked)["root"]) if n["role"] == role)
        found = (n for n in found if not placed or on_screen(n["bounds"]))
        return next((n for n in found if name is None or n["name"] == name), None)

    node: dict[str, Any] = wait_for(look, 20, f"a {role} {name or ''} in the tree")
    return node


def on_screen(box: dict[str, int] | None) -> bool:
    return box is not None and 0 <= box["x"] < 1920 and 0 <= box["y"] < 1080 and box["width"] > 0


def test_geany_has_its_file_menu_on_the_screen_and_clicking_it_lists_its_items(seen: Desktop) -> None:
    seen.act(action="application", application="code_editor")
    menu = find(seen, "menu", "File")
    assert on_screen(menu["bounds"]) and "showing" in menu["states"]
    seen.act(action="click_mouse", element=menu["id"], button="left", clickCount=1, settle={})
    item = find(seen, "menu item", "Save", interactiveOnly=True)  # shown now: the menu is open
    assert on_screen(item["bounds"])
    seen.act(action="type_keys", keys=["Escape"])


def test_the_terminal_node_holds_what_was_typed_into_it(seen: Desktop) -> None:
    seen.act(action="application", application="terminal")
    terminal = find(seen, "terminal")
    assert on_screen(terminal["bounds"])
    seen.act(action="type_text", element=terminal["id"], text="echo a11y-$((6*7))\n", settle={})
    wait_for(lambda: "a11y-42" in find(seen, "terminal")["text"], 10, "the output in the terminal's text")


def test_the_tree_follows_the_focus_from_window_to_window(seen: Desktop) -> None:
    """A tree starts at the window the last one was read from while it stays the active one: it never
    answers for a window that lost the focus."""
    for application, geany in (("code_editor", True), ("terminal", False), ("code_editor", True)):
        seen.act(action="application", application=application)
        wait_for(functools.partial(shows, seen, geany), 20, f"{application}'s tree")
        for _ in range(3):  # read again: from the window found, while it stays the active one
            assert shows(seen, geany), application


def shows(desktop: Desktop, geany: bool) -> bool:
    """Whether the focused window's tree is Geany's (or, ``geany`` false, another's)."""
    root = tree(desktop)["root"]
    return root is not None and ("Geany" in str(root["name"])) == geany


def typed(desktop: Desktop, action: str, **fields: Any) -> dict[str, Any]:
    evidence: dict[str, Any] = desktop.act(action=action, evidence=True, settle={}, **fields)["evidence"]
    return evidence


def test_keys_evidence_says_whether_the_focused_text_changed(seen: Desktop) -> None:
    seen.act(action="application", application="code_editor")
    texts = [n for n in nodes(tree(seen)["root"]) if {"editable", "multi line"} <= set(n["states"])]
    editor = max(texts, key=lambda n: n["bounds"]["width"] * n["bounds"]["height"] if n["bounds"] else 0)
    seen.act(action="click_mouse", element=editor["id"], button="left", clickCount=1)

    def focused() -> bool:
        return any(n["id"] == editor["id"] and "focused" in n["states"] for n in nodes(tree(seen)["root"]))

    wait_for(focused, 10, "the document focused")
    assert typed(seen, "type_text", text="a11y")["textChanged"] is True
    assert typed(seen, "type_keys", keys=["Left"])["textChanged"] is False  # the caret moved, not the text
    assert typed(seen, "press_keys", keys=["BackSpace"], press="down")["textChanged"] is True
    typed(seen, "press_keys", keys=["BackSpace"], press="up")
    seen.act(action="application", application="terminal")
    terminal = find(seen, "terminal")
    assert typed(seen, "type_text", element=terminal["id"], text="echo typed")["textChanged"] is True
    assert typed(seen, "paste_text", text=" more")["textChanged"] is True
    assert typed(seen, "type_keys", keys=["shift"])["textChanged"] is False  # a modifier alone types nothing


def test_an_element_gone_is_a_400_that_says_so(seen: Desktop) -> None:
    seen.act(action="application", application="terminal")
    terminal = find(seen, "terminal")
    stop_process(seen.controller.launched()["terminal"])
    for body in (
        {"action": "click_mouse", "element": terminal["id"], "button": "left", "clickCount": 1},
        {"action": "type_text", "element": terminal["id"], "text": "x"},
        {"action": "click_mouse", "element": "1.99999/1", "button": "left", "clickCount": 1},
    ):
        answer = seen.post(**body)
        assert answer.status_code == 400, answer.text
        assert "is gone" in answer.json()["error"] or "not on the screen" in answer.json()["error"]


def test_interactive_only_within_and_space(seen: Desktop) -> None:
    seen.act(action="application", application="code_editor")
    menu = find(seen, "menu", "File")
    controls = list(nodes(tree(seen, interactiveOnly=True)["root"]))[1:]
    assert controls and all(interactive(n) for n in controls)
    box = menu["bounds"]
    within = {"x": box["x"], "y": box["y"], "width": max(box["width"], 16), "height": max(box["height"], 16)}
    inside = list(nodes(tree(seen, within=within)["root"]))[1:]
    assert inside and any(n["id"] == menu["id"] for n in inside)
    assert all(n["bounds"]["x"] < box["x"] + within["width"] for n in inside)
    half = find(seen, "menu", "File", space={"width": 960})["bounds"]
    assert abs(half["x"] - box["x"] // 2) <= 1 and abs(half["width"] - box["width"] / 2) <= 2


def test_caps_are_reported_when_hit(seen: Desktop, monkeypatch: pytest.MonkeyPatch) -> None:
    seen.act(action="application", application="code_editor")
    find(seen, "menu", "File")
    shallow = tree(seen, maxDepth=2)
    assert "depth" in shallow["capped"] and all(not c["children"] for c in shallow["root"]["children"])
    monkeypatch.setattr(accessibility, "MAX_NODES", 40)
    cut = tree(seen)
    assert "nodes" in cut["capped"] and cut["nodes"] <= 40
    monkeypatch.setattr(accessibility, "MAX_NODES", 2000)
    monkeypatch.setattr(accessibility, "MAX_TEXT", 3)
    seen.act(action="application", application="terminal")
    terminal = find(seen, "terminal")
    assert len(terminal["text"]) <= 3 and "text" in tree(seen)["capped"]


def test_the_client_method_and_the_mcp_tool_answer_the_same_tree(seen: Desktop) -> None:
    seen.act(action="application", application="code_editor")
    find(seen, "menu", "File")
    with DesktopClient(seen.url) as client:
        data = client.accessibility(max_depth=4)
    assert data["root"]["role"] == "frame" and data["nodes"] > 1

    async def over_mcp() -> dict[str, Any]:
        async with Client(f"{seen.url}/mcp") as mcp:
            result = await mcp.call_tool("computer_accessibility", {"maxDepth": 4})
        assert not result.is_error and result.structured_content is not None
        return result.structured_content

    assert anyio.run(over_mcp)["root"]["id"] == data["root"]["id"]


@pytest.mark.parametrize(
    "bad", [{"maxDepth": 0}, {"maxDepth": 1000}, {"window": "topmost"}, {"interactiveOnly": "yes"}]
)
def test_bad_input_is_a_400(seen: Desktop, bad: dict[str, Any]) -> None:
    answer = seen.post(action="accessibility", **bad)
    assert answer.status_code == 400 and "accessibility" in answer.json()["error"], answer.text
