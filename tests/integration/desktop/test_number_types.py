"""Numbers are JSON numbers: a boolean or a numeric string in any numeric field of any action is a 400
(pydantic's lax mode took ``{"action": "wait", "duration": false}`` as a wait of 0 ms)."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any

import pytest

from deskpilot.computer.actions import ACTION_MODELS
from deskpilot.computer.tools import inline_schema
from tests.integration.desktop.conftest import Desktop

# A valid request that sets every numeric field (the screenshot's width and scale exclude each other).
EXAMPLES: list[dict[str, Any]] = [
    {"action": "move_mouse", "coordinates": {"x": 12, "y": 10.5}},
    {"action": "trace_mouse", "path": [{"x": 12, "y": 10}, {"x": 14.5, "y": 11}]},
    {"action": "click_mouse", "coordinates": {"x": 12, "y": 10}, "button": "left", "clickCount": 1},
    {"action": "press_mouse", "coordinates": {"x": 12, "y": 10}, "button": "left", "press": "up"},
    {"action": "drag_mouse", "path": [{"x": 12, "y": 10}, {"x": 20, "y": 10}], "button": "left"},
    {"action": "scroll", "coordinates": {"x": 12, "y": 10}, "direction": "down", "scrollCount": 1},
    {"action": "type_keys", "keys": ["shift"], "delay": 0},
    {"action": "type_text", "text": "", "delay": 0},
    {"action": "wait", "duration": 0},
    {"action": "screenshot", "format": "jpeg", "quality": 50, "width": 320},
    {"action": "screenshot", "scale": 0.25},
    {"action": "screenshot", "region": {"x": 0, "y": 0, "width": 32, "height": 32}, "compression": 1},
    {
        "action": "accessibility",
        "maxDepth": 5,
        "within": {"x": 0, "y": 0, "width": 32, "height": 32},
        "space": {"width": 640, "region": {"x": 0, "y": 0, "width": 320, "height": 200}},
    },
]
_INPUT = [
    *EXAMPLES[:8],
    {"action": "press_keys", "keys": ["shift"], "press": "up"},
    {"action": "paste_text", "text": ""},
    {"action": "application", "application": "desktop"},
]
# the settle and screenshot an input action or a wait may ask for (our extension), on every one of them
_LOOKS = [*_INPUT, {"action": "wait", "duration": 0}]
EXAMPLES += [
    {
        **body,
        "settle": {"quietMs": 1, "expectMs": 0, "maxMs": 0},
        "screenshot": {"format": "jpeg", "quality": 50, "width": 320},
    }
    for body in _LOOKS
] + [{**body, "screenshot": {"scale": 0.25}} for body in _LOOKS]
EXAMPLES += [
    {**body, "screenshot": {"region": {"x": 0, "y": 0, "width": 32, "height": 32}, "compression": 1}}
    for body in _LOOKS
]
# coordinates in an image's pixels (our extension): a 640x400 zoom of a region
EXAMPLES += [
    {**body, "space": {"width": 640, "region": {"x": 0, "y": 0, "width": 320, "height": 200}}}
    for body in _INPUT
]
ILL_TYPED = [True, False, "5", "0.5", "1e2", ""]


def numeric_fields(schema: dict[str, Any], where: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    """Where a schema takes a number: ("coordinates", "x"), ("path", 0, "x"), ("clickCount",) ..."""
    kinds = {schema.get("type")} | {s.get("type") for s in schema.get("anyOf", [])}
    if kinds & {"integer", "number"}:
        yield where
    for option in [schema, *schema.get("anyOf", [])]:
        for name, sub in option.get("properties", {}).items():
            yield from numeric_fields(sub, (*where, name))
        if "items" in option:
            yield from numeric_fields(option["items"], (*where, 0))


def field_cases() -> Iterator[tuple[dict[str, Any], tuple[Any, ...]]]:
    for body in EXAMPLES:
        for where in numeric_fields(inline_schema(ACTION_MODELS[body["action"]])):
            node = body
            try:
                for key in where:
                    node = node[key]
            except (KeyError, IndexError):
                continue  # set by another example of the same action
            yield body, where


CASES = list(field_cases())


def test_the_examples_set_every_numeric_field_of_every_action() -> None:
    every = {
        (action, where)
        for action, model in ACTION_MODELS.items()
        for where in numeric_fields(inline_schema(model))
    }
    assert every == {(body["action"], where) for body, where in CASES}


def with_value(body: dict[str, Any], where: tuple[Any, ...], value: object) -> dict[str, Any]:
    out = copy.deepcopy(body)
    node = out
    for key in where[:-1]:
        node = node[key]
    node[where[-1]] = value
    return out


@pytest.mark.parametrize(
    ("body", "where"), CASES, ids=[f"{b['action']}.{'.'.join(map(str, w))}" for b, w in CASES]
)
def test_a_boolean_or_a_string_is_refused_in_every_numeric_field(
    desktop: Desktop, body: dict[str, Any], where: tuple[Any, ...]
) -> None:
    for value in ILL_TYPED:
        r = desktop.post(**with_value(body, where, value))
        assert r.status_code == 400, (value, r.text)
        error = r.json()["error"]
        assert error.startswith(f"{body['action']}: {'.'.join(map(str, where))}: "), error
        assert "must be a number" in error, error


@pytest.mark.parametrize("body", EXAMPLES, ids=[b["action"] for b in EXAMPLES])
def test_numbers_are_still_taken(desktop: Desktop, body: dict[str, Any]) -> None:
    if body["action"] == "accessibility":  # validated, then 503: this display has no AT-SPI bus
        r = desktop.post(**body)  # (tests/integration/desktop/test_accessibility.py gives one)
        assert r.status_code == 503 and "AT-SPI" in r.json()["error"], r.text
        return
    desktop.act(**body)


def test_an_integral_float_is_an_integer_and_an_integer_a_coordinate(desktop: Desktop) -> None:
    desktop.act(action="click_mouse", coordinates={"x": 15, "y": 11}, button="left", clickCount=1.0)
    desktop.act(action="wait", duration=1.0)
    assert desktop.act(action="cursor_position")["data"] == {"x": 15, "y": 11}
    r = desktop.post(action="wait", duration=1.5)
    assert r.status_code == 400 and "fractional part" in r.json()["error"]
