"""deskpilot.desktop.mcp_fastpath changes the speed of the SDK's transports, never what goes on the wire."""

import json
import logging
import re
from collections.abc import Callable
from typing import Any

import pybase64
import pytest
from mcp.server import _streamable_http_modern as handler
from mcp.types import (
    CallToolResult,
    ImageContent,
    JSONRPCError,
    JSONRPCNotification,
    JSONRPCRequest,
    JSONRPCResponse,
)
from sse_starlette.event import ServerSentEvent

from deskpilot.desktop import mcp_fastpath
from deskpilot.desktop.mcp_fastpath import Outgoing

REFERENCE = re.compile(r"\r\n|\r|\n")
EVERY_SPEEDUP = {mcp_fastpath.SSE_LINE_BREAKS, mcp_fastpath.SSE_WRITES, mcp_fastpath.STREAMABLE_DUMPS}


@pytest.fixture(scope="module", autouse=True)
def installed() -> None:
    # Fails when an upgrade leaves the tested series: then check these tests still hold on the new
    # version (and where it serialises replies now) before widening mcp_fastpath.TESTED.
    assert mcp_fastpath.install() == EVERY_SPEEDUP


def handler_json() -> Any:
    """The ``json`` the SDK's streamable-HTTP handler serialises with (a private import of that module)."""
    return vars(handler)["json"]


@pytest.fixture
def unpatched(monkeypatch: pytest.MonkeyPatch) -> None:
    """The libraries as they ship (restored to whatever was installed afterwards)."""
    monkeypatch.setattr(ServerSentEvent, "_LINE_SEP_EXPR", re.compile(r"\r\n|\r|\n"))
    monkeypatch.setattr(handler, "json", json)


def versions(**found: str) -> Callable[[str], str]:
    return lambda dist: found.get(dist.replace("-", "_"), "0.0.0")


def test_install_is_a_no_op_on_untested_versions(unpatched: None, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger=mcp_fastpath.__name__):
        assert mcp_fastpath.install(versions(mcp="2.4.0", sse_starlette="4.0.1")) == set()
    assert isinstance(ServerSentEvent._LINE_SEP_EXPR, re.Pattern)
    assert handler_json() is json
    [warning] = caplog.records
    assert warning.levelno == logging.WARNING
    assert vars(warning)["versions"] == "mcp 2.4.0, sse-starlette 4.0.1"


def test_install_picks_by_the_library_each_speedup_relies_on(unpatched: None) -> None:
    only_sse = mcp_fastpath.install(versions(mcp="3.0.0", sse_starlette="3.7.2"))
    assert only_sse == {mcp_fastpath.SSE_LINE_BREAKS}
    assert handler_json() is json
    assert mcp_fastpath.install(versions(mcp="2.3.1", sse_starlette="3.10.0")) == {
        mcp_fastpath.SSE_WRITES,
        mcp_fastpath.STREAMABLE_DUMPS,
    }


def test_install_is_idempotent(unpatched: None) -> None:
    assert mcp_fastpath.install() == EVERY_SPEEDUP
    line_breaks, dumps = ServerSentEvent._LINE_SEP_EXPR, handler_json()
    assert mcp_fastpath.install() == EVERY_SPEEDUP
    assert ServerSentEvent._LINE_SEP_EXPR is line_breaks and handler_json() is dumps
    assert ServerSentEvent._LINE_SEP_EXPR.split("a\nb") == ["a", "b"]  # wraps the regex, not itself


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

MESSAGES: list[JSONRPCRequest | JSONRPCNotification | JSONRPCResponse | JSONRPCError] = [
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
    options: dict[str, Any] = {"by_alias": True, "exclude_unset": True}
    assert Outgoing(message).model_dump_json(**options) == message.model_dump_json(**options)


def test_outgoing_repr_is_a_summary_not_the_payload() -> None:
    text = f"{Outgoing(MESSAGES[0])}"
    assert text == "JSONRPCResponse(id=3, ...)"


def test_the_streamable_handler_serialises_with_orjson() -> None:
    assert handler_json().dumps({"x": 1}) == '{"x":1}'
    assert handler_json().dumps is not json.dumps
    assert handler_json().loads is json.loads and handler_json().JSONDecodeError is json.JSONDecodeError


@pytest.mark.parametrize("message", MESSAGES, ids=lambda m: type(m).__name__)
def test_streamable_dumps_writes_the_same_json_value(message: JSONRPCResponse) -> None:
    body = message.model_dump(mode="json", by_alias=True, exclude_none=True)
    fast = handler_json().dumps(body, separators=(",", ":"))
    stdlib = json.dumps(body, separators=(",", ":"))
    assert json.loads(fast) == json.loads(stdlib)
    if stdlib.isascii() == fast.isascii():  # no \u escapes to spell differently: the very same text
        assert fast == stdlib
