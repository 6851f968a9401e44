"""Tool schemas generated from pydantic models: refs inlined, discriminator dropped."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from deskpilot.computer.tools import function_tool, inline_schema


class Point(BaseModel):
    x: float
    y: float


class Move(BaseModel):
    action: Literal["move_mouse"]
    coordinates: Point


class Trace(BaseModel):
    action: Literal["trace_mouse"]
    path: list[Point] = Field(description="points to pass through")
    holdKeys: list[str] | None = None


def test_refs_are_inlined_and_the_discriminator_dropped() -> None:
    params = inline_schema(Trace, drop=["action"])
    assert "$defs" not in str(params) and "$ref" not in str(params) and "title" not in params
    assert params["required"] == ["path"]
    assert params["properties"]["path"]["items"]["properties"]["x"] == {"type": "number"}
    assert params["properties"]["path"]["description"] == "points to pass through"
    assert "action" not in params["properties"]


def test_function_tool_shape() -> None:
    t = function_tool("computer_move_mouse", "Move.", inline_schema(Move, drop=["action"]))
    assert t["type"] == "function" and t["function"]["name"] == "computer_move_mouse"
    assert t["function"]["parameters"]["required"] == ["coordinates"]
