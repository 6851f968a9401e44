"""Deskpilot's action channel (GET /computer-use/ws) as its client speaks it, for the benches that put it
beside HTTP and the peers (desktop.py, peers.py): one socket kept open, no per-message deflate, each action
a message, the answer's head parsed, a screenshot's PNG the binary frame after it."""

from __future__ import annotations

import json
from types import TracebackType
from typing import Any, Self

from websockets.sync.client import connect


class Channel:
    def __init__(self, url: str) -> None:
        ws_url = "ws" + url.removeprefix("http") + "/computer-use/ws?frames=binary"
        self.ws = connect(ws_url, max_size=None, open_timeout=30, compression=None)

    def __call__(self, body: dict[str, Any]) -> dict[str, Any]:
        self.ws.send(json.dumps(body))
        head: dict[str, Any] = json.loads(self.ws.recv(timeout=60))
        assert head["status"] == 200, head
        if "imageBytes" in (head.get("data") or {}):
            head["image"] = self.ws.recv(timeout=60)
        return head

    def close(self) -> None:
        self.ws.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: type[BaseException] | BaseException | TracebackType | None) -> None:
        self.close()
