"""A request body, without a server: a big write_file's base64 decoded from the body itself answers exactly as
the whole body's parse would; the budget of bodies in flight lets them in first come first served, a big one
alone, and gives up a wait at its bound."""

from __future__ import annotations

import asyncio
import base64
import json
import os

import pytest

from deskpilot.computer import actions
from deskpilot.desktop.body import SMALL_BODY, BodyBudget, decode_data, parse_action_body
from deskpilot.errors import InvalidAction

LIMIT = 8 << 20
CONTENT = os.urandom(SMALL_BODY)  # its base64 makes a body past SMALL_BODY
B64 = base64.b64encode(CONTENT).decode()


def outcome(body: bytes) -> tuple[str, object]:
    """What a body comes to: the action's fields and its decoded content, or the error it is refused with."""
    try:
        action = parse_action_body(bytearray(body))
        fields = action.model_dump(exclude={"data"})
        content = decode_data(action, LIMIT) if isinstance(action, actions.WriteFile) else None
    except InvalidAction as exc:
        return "refused", exc.message
    return "ok", (fields, content)


def plain(body: bytes) -> tuple[str, object]:
    """The same, by the whole body's parse (a copy of the base64 in a string)."""
    try:
        action = actions.parse_action_json(body)
        fields = action.model_dump(exclude={"data"})
        content = decode_data(action, LIMIT) if isinstance(action, actions.WriteFile) else None
    except InvalidAction as exc:
        return "refused", exc.message
    return "ok", (fields, content)


BODIES = {
    "data last": f'{{"action": "write_file", "path": "a.bin", "data": "{B64}"}}',
    "data first, spaced": f'{{ "data" :\n "{B64}" , "action":"write_file","path":"a.bin","overwrite":false}}',
    "an escaped slash": json.dumps({"action": "write_file", "path": "a.bin", "data": B64}).replace(
        "/", "\\/"
    ),
    "a key inside the path": f'{{"action":"write_file","path":"x\\"data\\":\\"y","data":"{B64}"}}',
    "the string is another field's": f'{{"action":"write_file","data":"QUFB","path":"a","note":"{B64}"}}',
    "a nested data": f'{{"action":"write_file","path":"a","data":"QUFB","more":{{"data":"{B64}"}}}}',
    "data twice": f'{{"action":"write_file","path":"a.bin","data":"{B64}","data":"QUFB"}}',
    "another action": f'{{"action":"type_text","text":"hi","data":"{B64}"}}',
    "not base64": f'{{"action":"write_file","path":"a.bin","data":"{B64[:-8]}!!!!!!!!"}}',
    "a raw newline in it": f'{{"action":"write_file","path":"a.bin","data":"{B64[:-8]}\n"}}',
    "not JSON after it": f'{{"action":"write_file","path":"a.bin","data":"{B64}",}}',
    "a bad path": f'{{"action":"write_file","path":"a\\u202e.bin","data":"{B64}"}}',
    "a missing path": f'{{"action":"write_file","data":"{B64}"}}',
    "unclosed": f'{{"action":"write_file","path":"a.bin","data":"{B64}',
}


@pytest.mark.parametrize("text", BODIES.values(), ids=BODIES.keys())
def test_a_big_write_answers_as_the_whole_bodys_parse(text: str) -> None:
    body = text.encode()
    assert len(body) > SMALL_BODY
    assert outcome(body) == plain(body)


def test_the_base64_is_decoded_from_the_body_not_from_a_copy() -> None:
    body = bytearray(BODIES["data last"].encode())
    action = parse_action_body(body)
    assert isinstance(action, actions.WriteFile) and action.data == ""
    assert action.data_bytes == len(CONTENT)
    with pytest.raises(BufferError):  # a view of it is held: the body cannot be resized
        body.append(0)
    assert decode_data(action, LIMIT) == CONTENT
    body.append(0)  # let go of once decoded
    assert action.data_bytes == len(CONTENT)


def test_a_small_body_is_parsed_whole() -> None:
    body = bytearray(b'{"action": "write_file", "path": "a.txt", "data": "aGVsbG8K"}')
    action = parse_action_body(body)
    assert isinstance(action, actions.WriteFile) and action.data == "aGVsbG8K"
    assert decode_data(action, LIMIT) == b"hello\n" and action.data_bytes == 6


def run(coroutine_function: object) -> None:
    asyncio.run(coroutine_function())  # type: ignore[operator]


def test_bodies_past_the_budget_wait_their_turn_first_come_first_served() -> None:
    async def scenario() -> None:
        budget = BodyBudget(100, wait=60)
        order: list[str] = []

        async def body(name: str, size: int) -> int:
            held = await budget.acquire(size)
            order.append(name)
            return held

        first = await budget.acquire(60)
        second = asyncio.create_task(body("second", 60))
        small = asyncio.create_task(body("small", 10))  # would fit now, but comes after the second
        await asyncio.sleep(0)
        assert budget.waiting == 2 and budget.held == 60 and order == []
        budget.release(first)
        held = await second
        assert await small == 10 and order == ["second", "small"] and budget.held == 70
        budget.release(held)
        budget.release(10)
        assert budget.held == 0 and budget.waiting == 0

    run(scenario)


def test_a_body_larger_than_the_budget_is_let_in_alone() -> None:
    async def scenario() -> None:
        budget = BodyBudget(100, wait=60)
        assert await budget.acquire(500) == 100
        waiting = asyncio.create_task(budget.acquire(1))
        await asyncio.sleep(0)
        assert budget.waiting == 1
        budget.release(100)
        assert await waiting == 1

    run(scenario)


def test_a_wait_past_its_bound_gives_up_and_lets_the_next_in() -> None:
    async def scenario() -> None:
        budget = BodyBudget(100, wait=0.01)
        await budget.acquire(90)
        with pytest.raises(TimeoutError):
            await budget.acquire(50)
        assert budget.waiting == 0 and budget.held == 90
        budget.wait = 60
        queued = asyncio.create_task(budget.acquire(50))
        behind = asyncio.create_task(budget.acquire(5))
        await asyncio.sleep(0)
        queued.cancel()  # the client went away: the one behind it is let in at once
        assert await behind == 5 and budget.held == 95

    run(scenario)
