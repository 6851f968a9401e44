"""The body of a ``POST /computer-use`` (and of its Bytebot twin): read while it streams, never more than
the largest valid request, a write_file of a file at the limit."""

from __future__ import annotations

from starlette.requests import Request

from deskpilot.desktop.files import max_request_bytes
from deskpilot.errors import TooLarge


async def read_action_body(request: Request) -> bytearray:
    """The request body, refused with 413 as soon as it is known to pass the limit: from its Content-Length
    before reading any of it, else while its chunks arrive, so no more than the limit is ever held."""
    limit = max_request_bytes(request.app.state.controller.settings.max_file_bytes)
    length = request.headers.get("content-length", "")
    if length.isdigit() and int(length) > limit:
        raise body_too_large(limit)
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > limit:
            raise body_too_large(limit)
    return body


def body_too_large(limit: int) -> TooLarge:
    # only a write_file body can be this large: answer as write_file fails, with `message` too
    return TooLarge(
        f"the request body is larger than {limit} bytes, the most a write_file of a file at the limit "
        "(DESKTOP_MAX_FILE_BYTES) needs",
        file_action=True,
    )
