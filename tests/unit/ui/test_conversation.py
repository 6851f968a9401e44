"""The conversation reads like a log a person can follow: one short line per tool call."""

from __future__ import annotations

import pytest

from deskpilot.computer.describe import describe_tool_call
from deskpilot.ui.conversation import render_block, render_message


@pytest.mark.parametrize(
    ("name", "inp", "line"),
    [
        (
            "computer_click_mouse",
            {"coordinates": {"x": 640, "y": 400}, "button": "left", "clickCount": 1},
            "clicked left at (640, 400)",
        ),
        (
            "click_mouse",
            {"coordinates": {"x": 10.0, "y": 20}, "button": "right", "clickCount": 2},
            "double-clicked right at (10, 20)",
        ),
        (
            "computer_click_mouse",
            {"button": "left", "clickCount": 1, "holdKeys": ["ctrl"]},
            "clicked left holding ctrl",
        ),
        ("computer_move_mouse", {"coordinates": {"x": 1, "y": 2}}, "moved the mouse to (1, 2)"),
        (
            "computer_drag_mouse",
            {"path": [{"x": 1, "y": 2}, {"x": 5, "y": 6}], "button": "left"},
            "dragged left from (1, 2) to (5, 6)",
        ),
        (
            "computer_scroll",
            {"coordinates": {"x": 3, "y": 4}, "direction": "down", "scrollCount": 5},
            "scrolled down 5× at (3, 4)",
        ),
        ("computer_type_text", {"text": "hello"}, 'typed "hello"'),
        ("computer_paste_text", {"text": "日本"}, 'pasted "日本"'),
        ("computer_type_keys", {"keys": ["ctrl", "s"]}, "pressed ctrl+s"),
        ("computer_press_keys", {"keys": ["shift"], "press": "down"}, "held down shift"),
        ("computer_wait", {"duration": 1500}, "waited 1.5 s"),
        ("computer_screenshot", {}, "took a screenshot"),
        ("computer_application", {"application": "browser"}, "switched to browser"),
        ("computer_write_file", {"path": "a.txt", "data": "aGk="}, "wrote file a.txt"),
        (
            "set_task_status",
            {"status": "needs_help", "description": "Which account?"},
            "set the task to needs help: Which account?",
        ),
        ("computer", {"action": "left_click", "coordinate": [7, 8]}, "clicked left at (7, 8)"),
        ("my_tool", {"a": 1}, 'called my_tool(a="1")'),
    ],
)
def test_tool_calls_read_as_one_line(name: str, inp: dict, line: str) -> None:
    assert describe_tool_call(name, inp) == line


def test_long_typed_text_is_shortened() -> None:
    assert describe_tool_call("type_text", {"text": "x" * 500}).endswith('…"')


def test_image_blocks_become_data_uris() -> None:
    b = render_block(
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "AAA"}}
    )
    assert (b.kind, b.src) == ("image", "data:image/png;base64,AAA")


def test_tool_result_error_shows_its_text_and_keeps_its_screenshot() -> None:
    b = render_block(
        {
            "type": "tool_result",
            "tool_use_id": "t1",
            "is_error": True,
            "content": [
                {"type": "text", "text": "coordinates off-screen"},
                {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "B"}},
            ],
        }
    )
    assert b.kind == "error" and b.text == "coordinates off-screen"
    assert [c.kind for c in b.children] == ["image"]


def test_a_message_of_only_tool_results_is_not_shown_as_the_user_speaking() -> None:
    m = render_message({"id": "1", "role": "USER", "content": [{"type": "tool_result", "content": []}]})
    assert m.author == "tool"
    m = render_message({"id": "2", "role": "USER", "content": [{"type": "text", "text": "hi"}]})
    assert m.author == "user"
    shot = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "A"}}
    m = render_message(
        {"id": "4", "role": "USER", "content": [{"type": "text", "text": "The screen now:"}, shot]}
    )
    assert m.author == "tool"
    m = render_message({"id": "3", "role": "ASSISTANT", "content": "plain string"})
    assert (m.author, m.blocks[0].text) == ("agent", "plain string")


def test_unknown_blocks_are_kept_visible_as_json() -> None:
    b = render_block({"type": "document", "title": "x"})
    assert b.kind == "raw" and '"title": "x"' in b.detail
