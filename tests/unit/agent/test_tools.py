"""The tools given to the model: one per desktop action, generated from the desktop's own models."""

from __future__ import annotations

import pytest

from deskpilot.agent.tools import tool_definitions
from deskpilot.computer.actions import ACTION_MODELS, ClickMouse, DragMouse, MoveMouse, parse_action
from deskpilot.computer.geometry import Size, screen_rect
from deskpilot.errors import InvalidAction

HD = Size(1280, 720)


def by_name() -> dict[str, dict]:
    return {t["function"]["name"]: t["function"] for t in tool_definitions(HD)}


def test_one_tool_per_desktop_action_plus_the_agent_tools() -> None:
    names = set(by_name())
    desktop = {f"computer_{a}" for a in ACTION_MODELS if a != "accessibility"}  # its tree: elements
    assert names == desktop | {"set_task_status", "create_task", "zoom", "elements"}
    assert len(ACTION_MODELS) == 17
    assert "element" not in str(by_name()["computer_click_mouse"]["parameters"])  # no ids to give


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


def test_image_pixels_map_onto_the_screen_in_the_desktop_model() -> None:
    space = {"width": HD.width}
    args = {"coordinates": {"x": 1279, "y": 719}, "button": "left", "clickCount": 2, "space": space}
    action = parse_action({**args, "action": "click_mouse"})
    assert isinstance(action, ClickMouse) and action.coordinates is not None
    assert (action.coordinates.x, action.coordinates.y) == (1919, 1079) and action.space is None
    drag = parse_action(
        {
            "path": [{"x": 0, "y": 0}, {"x": 640, "y": 360}],
            "button": "left",
            "space": space,
            "action": "drag_mouse",
        }
    )
    assert isinstance(drag, DragMouse)
    assert [(p.x, p.y) for p in drag.path] == [(0, 0), (960, 540)]
    # a region zoomed: the image's pixels land in the region
    zoom = {"width": 960, "region": {"x": 1600, "y": 0, "width": 320, "height": 200}}
    moved = parse_action({"coordinates": {"x": 959, "y": 599}, "space": zoom, "action": "move_mouse"})
    assert isinstance(moved, MoveMouse)
    assert (moved.coordinates.x, moved.coordinates.y) == (1919, 199)


def test_a_point_off_the_image_is_refused_in_the_images_terms() -> None:
    with pytest.raises(InvalidAction, match=r"\(1280, 10\) is not on the 1280x720 image"):
        parse_action({"coordinates": {"x": 1280, "y": 10}, "space": {"width": 1280}, "action": "move_mouse"})


def test_a_boolean_coordinate_is_left_for_validation_to_refuse() -> None:
    args = {"coordinates": {"x": True, "y": 10}, "space": {"width": HD.width}}
    with pytest.raises(InvalidAction, match=r"coordinates\.x: must be a number, not true"):
        parse_action({**args, "action": "move_mouse"})


def test_pointing_tools_take_in_zoom_and_the_zoom_tool_speaks_screenshot_pixels() -> None:
    tools = by_name()
    for name in ("computer_click_mouse", "computer_move_mouse", "computer_drag_mouse", "computer_scroll"):
        assert tools[name]["parameters"]["properties"]["inZoom"]["type"] == "boolean", name
    assert "inZoom" not in tools["computer_type_text"]["parameters"]["properties"]
    assert set(tools["zoom"]["parameters"]["properties"]) == {"x", "y", "width", "height"}
    assert "inZoom: true" in tools["zoom"]["description"]


def test_a_screenshot_rectangle_maps_onto_the_screen_cut_and_grown() -> None:
    assert screen_rect(640, 360, 64, 36, HD) == (960, 540, 96, 54)
    assert screen_rect(1270, 710, 64, 36, HD) == (1904, 1064, 16, 16)  # cut at the edge, grown to 16
    assert screen_rect(1280, 0, 10, 10, HD) is None
