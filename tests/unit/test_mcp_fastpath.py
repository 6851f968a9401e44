"""The SSE fast path of app/desktop/mcp.py encodes every event exactly as sse-starlette's regex does."""

import re

import pytest
from sse_starlette.event import ServerSentEvent

import app.desktop.mcp  # noqa: F401  (installs the fast path)

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
