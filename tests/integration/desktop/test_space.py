"""One coordinate contract: a scaled or cropped screenshot says where it lies (its size, the screen's, the
region, the scale), and a coordinate action given in that image's pixels (``space``) lands on the screen pixel
the image shows, over HTTP and MCP alike; a point off that image is a 400 in the image's terms. Without
``space`` and for a full-size screenshot the answers are the spec's."""

from __future__ import annotations

import base64
import io

import pytest
from mcp import Client
from PIL import Image

from tests.integration.desktop.conftest import Desktop


def pointer(desktop: Desktop) -> tuple[int, int]:
    data = desktop.act(action="cursor_position")["data"]
    return data["x"], data["y"]


def test_a_scaled_screenshot_says_how_it_maps_and_a_full_one_is_the_specs(desktop: Desktop) -> None:
    assert set(desktop.act(action="screenshot")["data"]) == {"image"}
    data = desktop.act(action="screenshot", width=1366)["data"]
    assert Image.open(io.BytesIO(base64.b64decode(data["image"]))).size == (1366, 768)
    assert data["size"] == {"width": 1366, "height": 768} and data["screen"] == {
        "width": 1920,
        "height": 1080,
    }
    assert data["scale"] == pytest.approx(1366 / 1920) and "region" not in data
    zoom = desktop.act(
        action="screenshot", region={"x": 1600, "y": 0, "width": 320, "height": 200}, width=960
    )
    assert zoom["data"]["scale"] == 3 and zoom["data"]["region"]["x"] == 1600


def test_points_of_a_scaled_image_land_where_the_image_shows_them(desktop: Desktop) -> None:
    desktop.act(action="move_mouse", coordinates={"x": 683, "y": 384}, space={"width": 1366})
    assert pointer(desktop) == (960, 540)
    desktop.act(action="move_mouse", coordinates={"x": 1365, "y": 767}, space={"width": 1366})
    assert pointer(desktop) == (1919, 1079)
    desktop.act(action="move_mouse", coordinates={"x": 5, "y": 6}, space="screen")  # the default, said
    assert pointer(desktop) == (5, 6)


def test_a_zoomed_regions_answer_is_the_space_of_its_points(desktop: Desktop) -> None:
    data = desktop.act(
        action="screenshot", region={"x": 1600, "y": 0, "width": 320, "height": 200}, width=960
    )
    space = {"width": data["data"]["size"]["width"], "region": data["data"]["region"]}
    path = [{"x": 0, "y": 0}, {"x": 480, "y": 300}, {"x": 959, "y": 599}]
    desktop.act(action="trace_mouse", path=path, space=space)
    assert pointer(desktop) == (1919, 199)
    desktop.act(action="move_mouse", coordinates={"x": 480, "y": 300}, space=space)
    assert pointer(desktop) == (1760, 100)


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (
            {"coordinates": {"x": 1366, "y": 0}, "space": {"width": 1366}},
            "(1366, 0) is not on the 1366x768 image",
        ),
        ({"coordinates": {"x": 1, "y": 1}, "space": {"width": 8}}, "space.width"),
        ({"coordinates": {"x": 1, "y": 1}, "space": {"width": 100, "scale": 2}}, "space.scale"),
        ({"coordinates": {"x": 1, "y": 1}, "space": "image"}, "space"),
    ],
)
def test_a_point_off_its_image_or_a_wrong_space_is_a_400(desktop: Desktop, body: dict, message: str) -> None:
    r = desktop.post(action="move_mouse", **body)
    assert r.status_code == 400 and message in r.json()["error"], r.text


@pytest.mark.anyio
async def test_mcp_takes_the_same_space_and_says_the_same_geometry(desktop: Desktop) -> None:
    async with Client(f"{desktop.url}/mcp") as client:
        shot = await client.call_tool("computer_screenshot", {"width": 1280})
        assert shot.structured_content is not None and shot.structured_content["size"] == {
            "width": 1280,
            "height": 720,
        }
        moved = await client.call_tool(
            "computer_move_mouse", {"coordinates": {"x": 640, "y": 360}, "space": {"width": 1280}}
        )
        assert not moved.is_error, moved.content
    assert pointer(desktop) == (960, 540)
