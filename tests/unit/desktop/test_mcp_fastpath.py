"""app.desktop.mcp_fastpath.py changes the speed of the SDK's SSE transport, never its bytes."""

import json
import re

import pybase64
import pytest
from mcp.types import (
    CallToolResult,
    ImageContent,
    JSONRPCError,
    JSONRPCNotification,
    JSONRPCRequest,
    JSONRPCResponse,
)
from sse_starlette.event import ServerSentEvent

from app.desktop.mcp_fastpath import Outgoing

REFERENCE = re.compile(r"\r\n|\r|\n")


@pytest.mark.parametrize(
    "data", ["", "one line", '{"jsonrpc":"2.0","result":{}}', "a\r\nb\rc\nd", "\n", "\r\n\r", "x\n\ny\r"]
)
def test_events_encode_as_with_the_regex(data: str) -> None:
    event = ServerSentEvent(data=data, event="message\n", id="7\r")
    expected = (
        "id: 7\r\nevent: message\r\n" + "".join(f"data: {c}\r\n" for c in REFERENCE.split(data)) + "\r\n"
    )
    assert event.encode() == expected.encode()


SCREENSHOT = CallToolResult(
    content=[ImageContent(data=pybase64.b64encode_as_string(bytes(range(256)) * 4096), mime_type="image/png")]
).model_dump(by_alias=True, mode="json", exclude_none=True)

MESSAGES = [
    JSONRPCResponse(jsonrpc="2.0", id=3, result=SCREENSHOT),
    JSONRPCResponse(jsonrpc="2.0", id="a-\u00e9\u4e2d", result={"x": 1.5, "y": None, "s": '"\\\n\u2028😀'}),
    JSONRPCResponse(jsonrpc="2.0", id=2**70, result={"big": 2**80}),  # beyond orjson: pydantic's path
    JSONRPCRequest(jsonrpc="2.0", id=1, method="ping"),
    JSONRPCNotification(jsonrpc="2.0", method="notifications/progress", params={"progress": 0.25}),
    JSONRPCError(jsonrpc="2.0", id=4, error={"code": -32602, "message": "bad key 'Kontrol'"}),
]


@pytest.mark.parametrize("message", MESSAGES, ids=lambda m: type(m).__name__)
def test_outgoing_serialises_byte_for_byte_as_pydantic(message: JSONRPCResponse) -> None:
    # the SSE writer's call: model_dump_json(by_alias=True, exclude_unset=True)
    options = {"by_alias": True, "exclude_unset": True}
    assert Outgoing(message).model_dump_json(**options) == message.model_dump_json(**options)


def test_outgoing_repr_is_a_summary_not_the_payload() -> None:
    text = f"{Outgoing(MESSAGES[0])}"
    assert text == "JSONRPCResponse(id=3, ...)"


def test_the_streamable_handler_serialises_with_orjson() -> None:
    # Fails when an SDK upgrade moves the handler: then look again at where it serialises replies.
    from mcp.server import _streamable_http_modern as handler

    import app.desktop.mcp  # noqa: F401  (installs the fast path)

    assert handler.json.dumps({"x": 1}) == '{"x":1}'
    assert handler.json.dumps is not json.dumps
    assert handler.json.loads is json.loads and handler.json.JSONDecodeError is json.JSONDecodeError


@pytest.mark.parametrize("message", MESSAGES, ids=lambda m: type(m).__name__)
def test_streamable_dumps_writes_the_same_json_value(message: JSONRPCResponse) -> None:
    from mcp.server import _streamable_http_modern as handler

    body = message.model_dump(mode="json", by_alias=True, exclude_none=True)
    fast = handler.json.dumps(body, separators=(",", ":"))
    stdlib = json.dumps(body, separators=(",", ":"))
    assert json.loads(fast) == json.loads(stdlib)
    if stdlib.isascii() == fast.isascii():  # no \u escapes to spell differently: the very same text
        assert fast == stdlib
