"""An upstream that answers everything and records what reached it: what a proxy forwarded, verbatim."""

from __future__ import annotations

import json
from dataclasses import dataclass, field


@dataclass
class Seen:
    kind: str  # "http" or "websocket"
    method: str
    raw_path: str  # as the proxy sent it, still percent-encoded
    query: str
    headers: dict[str, list[str]]


@dataclass
class Recorder:
    """A bare ASGI app: every HTTP request gets 200 and a JSON echo, every WebSocket is accepted and told
    its path; each is appended to ``seen``."""

    seen: list[Seen] = field(default_factory=list)

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] == "lifespan":
            while (message := await receive())["type"] != "lifespan.shutdown":
                await send({"type": message["type"] + ".complete"})
            await send({"type": "lifespan.shutdown.complete"})
            return
        headers: dict[str, list[str]] = {}
        for k, v in scope["headers"]:
            headers.setdefault(k.decode("latin-1").lower(), []).append(v.decode("latin-1"))
        raw = (scope.get("raw_path") or scope["path"].encode()).decode("latin-1")
        query = scope["query_string"].decode("latin-1")
        self.seen.append(Seen(scope["type"], scope.get("method", "GET"), raw, query, headers))
        if scope["type"] == "websocket":
            await receive()  # websocket.connect
            await send({"type": "websocket.accept"})
            await send({"type": "websocket.send", "text": json.dumps({"path": raw})})
            await send({"type": "websocket.close", "code": 1000})
            return
        while (await receive()).get("more_body"):
            pass
        body = json.dumps({"path": raw}).encode()
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [(b"content-type", b"application/json")],
            }
        )
        await send({"type": "http.response.body", "body": body})

    def paths(self) -> list[str]:
        return [s.raw_path for s in self.seen]
