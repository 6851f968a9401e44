"""Which paths the UI's proxy forwards: the one place that decides what reaches the agent and the desktop.

The proxy forwards the path as the browser sent it (percent-encoded), so the upstream must see the same
resource the checks below saw. ASGI servers decode ``%2F`` into ``/`` before routing, so ``/vnc/..%2Fx``
arrives here as ``/vnc/../x`` and would leave the ``/vnc`` prefix on the upstream; anything that could
change which resource a path names is therefore refused (404) before a byte is forwarded: dot segments,
encoded slashes, backslashes and dots, double encoding, NUL, empty segments.
"""

from __future__ import annotations

import re

from starlette.types import Scope

# Escapes that, decoded once or twice, could move a path: "/", "\", ".", "%" (double encoding), NUL.
_MOVING_ESCAPES = ("%2f", "%5c", "%2e", "%25", "%00")
# noVNC's files: plain names in plain directories (checked against the whole of /usr/share/novnc).
_NOVNC_FILE = re.compile(r"/vnc/[A-Za-z0-9_-][A-Za-z0-9._-]*(/[A-Za-z0-9_-][A-Za-z0-9._-]*)*")
DESKTOP_PAGES = frozenset({"/vnc", "/vnc/"})
DESKTOP_SOCKET = "/vnc/websockify"


def raw_path(scope: Scope) -> str:
    """The path as the client sent it (still percent-encoded), without the query."""
    raw: bytes | None = scope.get("raw_path")
    return raw.decode("latin-1").split("?", 1)[0] if raw else str(scope["path"])


def normalised(scope: Scope) -> str | None:
    """The raw path when it names one resource unambiguously, else None (answer 404)."""
    raw = raw_path(scope)
    lowered = raw.lower()
    if not raw.startswith("/") or "\\" in raw or any(e in lowered for e in _MOVING_ESCAPES):
        return None
    if any(ord(c) < 0x21 or ord(c) > 0x7E for c in raw):
        return None
    segments = raw.split("/")[1:]
    inner = segments[:-1]  # a trailing slash ("/vnc/") leaves one empty segment at the end
    if any(s in (".", "..") for s in segments) or any(s == "" for s in inner):
        return None
    return raw


def desktop_allows(path: str, *, websocket: bool) -> bool:
    """The desktop behind the UI is only its live view: noVNC's files, and the bridge's WebSocket."""
    if websocket:
        return path == DESKTOP_SOCKET
    return path in DESKTOP_PAGES or _NOVNC_FILE.fullmatch(path) is not None
