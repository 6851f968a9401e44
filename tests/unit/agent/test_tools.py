"""The tools given to the model: one per desktop action, generated from the desktop's own models."""

from __future__ import annotations

import pytest

from deskpilot.agent.computer import map_coordinates
from deskpilot.agent.tools import tool_definitions
from deskpilot.computer.actions import ACTION_MODELS, parse_action
from deskpilot.computer.geometry import Size
from deskpilot.errors import InvalidAction

HD = Size(1280, 720)


def by_name() -> dict[str, dict]:
    return {t["function"]["name"]: t["function"] for t in tool_definitions(HD)}


def test_one_tool_per_desktop_action_plus_the_agent_tools() -> None:
    names = set(by_name())
    assert names == {f"computer_{a}" for a in ACTION_MODELS} | {"set_task_status", "create_task"}
    assert len(ACTION_MODELS) == 16


def test_schemas_speak_in_screenshot_pixels_and_hide_agent_fields() -> None:
    tools = by_name()
    x = tools["computer_click_mouse"]["parameters"]["properties"]["coordinates"]["anyOf"][0]["properties"][
        "x"
    ]
    assert x["maximum"] == 1279 and "1919" not in str(tools["computer_click_mouse"])
    assert "1280x720" in tools["computer_drag_mouse"]["description"]
    assert tools["computer_screenshot"]["parameters"]["properties"] == {}
    assert "action" not in str(tools["computer_type_text"]["parameters"]["properties"])
    assert tools["set_task_status"]["parameters"]["properties"]["status"]["enum"] == [
        "completed",
        "needs_help",
        "needs_review",
        "failed",
    ]


def test_mapped_arguments_validate_with_the_desktop_model() -> None:
    args = map_coordinates({"coordinates": {"x": 1279, "y": 719}, "button": "left", "clickCount": 2}, HD)
    action = parse_action({**args, "action": "click_mouse"})
    assert (action.coordinates.x, action.coordinates.y) == (1919, 1079)
    path = map_coordinates({"path": [{"x": 0, "y": 0}, {"x": 640, "y": 360}], "button": "left"}, HD)["path"]
    assert path == [{"x": 0, "y": 0}, {"x": 960, "y": 540}]


def test_a_boolean_coordinate_is_left_for_validation_to_refuse() -> None:
    args = map_coordinates({"coordinates": {"x": True, "y": 10}}, HD)
    assert args["coordinates"] == {"x": True, "y": 10}  # not scaled into a number
    with pytest.raises(InvalidAction, match=r"coordinates\.x: must be a number, not true"):
        parse_action({**args, "action": "move_mouse"})
