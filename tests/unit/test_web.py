"""What the services serve must always serialise, even values orjson refuses (stored before they were
refused at input, or written by an executor from a model's tool call)."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import orjson

from deskpilot.tasks.events import Event
from deskpilot.tasks.models import Message
from deskpilot.web import dumps, json_response


def test_values_orjson_refuses_fall_back_to_the_standard_library() -> None:
    deep: dict = {}
    for _ in range(300):
        deep = {"a": deep}
    value = {"big": 2**70, "negative": -(2**80), "deep": deep, "text": "é"}
    assert json.loads(dumps(value)) == value
    assert json_response(value).body == dumps(value)
    assert dumps({"n": 2**63}) == orjson.dumps({"n": 2**63})  # the usual path is orjson's own


def test_an_event_frame_carries_a_big_integer() -> None:
    now = datetime.now(UTC)
    message = Message(
        id="m", task_id="t", role="ASSISTANT", content=[{"type": "tool_use", "input": {"x": 10**30}}],
        created_at=now, updated_at=now,
    )  # fmt: skip
    frame = json.loads(Event.new_message(message).frame())
    assert frame["data"]["content"][0]["input"]["x"] == 10**30
