"""Same-origin reverse proxy: `/api/*` to the task service, `/vnc*` to the desktop, `/desktops/<name>/vnc*` to
that desktop of the fleet (``deskpilot.ui.fleet``), HTTP and WebSocket.

A browser then needs only the UI's port, which is what makes ingress and remote use simple. Bodies
are streamed both ways (uploads and noVNC's files are never buffered whole); WebSocket frames are
relayed as they come, text as text and binary as binary, with the upstream's subprotocol.

The UI's guard has already checked the browser (Host, Origin, session) when a request gets here; the proxy
speaks for it upstream: it sends the token as ``Authorization: Bearer`` itself and drops what the browser
sent as credentials (its cookies, any Authorization) and its Origin, so the upstreams never see the session
cookie. Only paths that name one resource are forwarded (``deskpilot.ui.paths``), and of the desktop only
its live view.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from http import HTTPStatus
from typing import Annotated

import httpx
from fastapi import APIRouter, Depends, Request, WebSocket
from fastapi.responses import JSONResponse, Response, StreamingResponse
from starlette.background import BackgroundTask
from starlette.requests import HTTPConnection
from starlette.websockets import WebSocketDisconnect, WebSocketState
from websockets.asyncio.client import connect as ws_connect
from websockets.exceptions import ConnectionClosed

from deskpilot.bridge import pump_until_either_ends
from deskpilot.errors import task_error_body
from deskpilot.ui import paths
from deskpilot.ui.fleet import DesktopDirectory

# RFC 9110 §7.6.1 connection-specific headers, plus the ones the HTTP client sets itself.
_HOP_BY_HOP = {
    "connection",
    "keep-alive",
    "proxy-authenticate",
    "proxy-authorization",
    "proxy-connection",
    "te",
    "trailer",
    "transfer-encoding",
    "upgrade",
    "host",
}
# Headers a WebSocket client library writes itself during the handshake.
_WS_OWN = _HOP_BY_HOP | {
    "sec-websocket-key",
    "sec-websocket-version",
    "sec-websocket-extensions",
    "sec-websocket-protocol",
    "sec-websocket-accept",
    "content-length",
}
# What the browser sent for the UI alone: its credentials (replaced by the token), its Origin (checked), and
# what only a proxy may say (the UI says it itself, from what its own server trusted).
_BROWSER_ONLY = {
    "cookie",
    "authorization",
    "origin",
    "x-forwarded-for",
    "x-forwarded-proto",
    "x-forwarded-host",
}
# Response headers the UI sets on everything it serves (security.deny_framing), instead of the upstream's.
_UI_OWN = {"x-frame-options", "content-security-policy"}


METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"]


class Upstream:
    """One service behind the UI: requests to ``prefix + path`` go to ``base_url + path``."""

    def __init__(
        self,
        name: str,
        base_url: str,
        prefix: str,
        client: httpx.AsyncClient,
        token: str | None = None,
        *,
        live_view_only: bool = False,
    ) -> None:
        self.name = name
        self.base_url = base_url.rstrip("/")
        self.prefix = prefix
        self.client = client
        self.token = token
        self.credentials = [(b"authorization", f"Bearer {token}".encode())] if token else []
        self.live_view_only = live_view_only  # a desktop: only its live view is forwarded

    def fleet_desktop(self, name: str, base_url: str) -> Upstream:
        """Another desktop's live view, at ``/desktops/<name>`` + its own path, through the same client."""
        return Upstream(
            f"desktop {name}", base_url, f"/desktops/{name}", self.client, self.token, live_view_only=True
        )

    def _headers(self, raw: list[tuple[bytes, bytes]], drop: set[str]) -> list[tuple[bytes, bytes]]:
        """The browser's headers for the upstream: without ``drop`` and the browser's own, plus the token."""
        kept = [(k, v) for k, v in raw if k.decode("latin-1").lower() not in drop | _BROWSER_ONLY]
        return kept + self.credentials

    def upstream_path(self, path: str) -> str:
        return path[len(self.prefix) :] if self.prefix and path.startswith(self.prefix) else path

    def _rewrite_location(self, location: str) -> str:
        """A redirect to the upstream's own address must land back on the proxy."""
        if location.startswith(self.base_url):
            location = location[len(self.base_url) :] or "/"
        elif not location.startswith("/"):
            return location  # relative or elsewhere: leave it
        return self.prefix + location

    def unreachable(self, error: Exception) -> JSONResponse:
        status = (
            HTTPStatus.GATEWAY_TIMEOUT
            if isinstance(error, httpx.TimeoutException)
            else HTTPStatus.BAD_GATEWAY
        )
        why = type(error).__name__
        message = f"The {self.name} service at {self.base_url} is not reachable ({why})."
        return JSONResponse(task_error_body(int(status), message), status_code=int(status))

    async def forward_http(self, request: Request, path: str) -> Response:
        """Forward to ``path`` (the browser's path, still percent-encoded) on the upstream."""
        url = httpx.URL(self.base_url + self.upstream_path(path), query=request.url.query.encode())
        headers = self._headers(request.headers.raw, _HOP_BY_HOP)
        client_host = request.client.host if request.client else ""
        headers += [
            (b"x-forwarded-for", client_host.encode()),
            (b"x-forwarded-proto", request.url.scheme.encode()),
            (b"x-forwarded-host", request.headers.get("host", "").encode()),
        ]
        has_body = "content-length" in request.headers or "transfer-encoding" in request.headers
        upstream_request = self.client.build_request(
            request.method, url, headers=headers, content=request.stream() if has_body else None
        )
        try:
            response = await self.client.send(upstream_request, stream=True)
        except httpx.HTTPError as exc:
            return self.unreachable(exc)
        out_headers: dict[str, list[str]] = {}
        for key, value in response.headers.multi_items():
            lower = key.lower()
            if lower in _HOP_BY_HOP or lower in _UI_OWN:
                continue
            if lower == "location":
                value = self._rewrite_location(value)
            out_headers.setdefault(lower, []).append(value)
        proxied = StreamingResponse(
            response.aiter_raw(), status_code=response.status_code, background=BackgroundTask(response.aclose)
        )
        # Keep repeated headers (Set-Cookie) and the upstream's own content headers verbatim.
        proxied.raw_headers = [
            (k.encode("latin-1"), v.encode("latin-1")) for k, values in out_headers.items() for v in values
        ]
        return proxied

    async def forward_websocket(self, websocket: WebSocket, path: str) -> None:
        base = "ws" + self.base_url.removeprefix("http")
        url = base + self.upstream_path(path)
        if websocket.url.query:
            url += "?" + websocket.url.query
        headers = [
            (k.decode("latin-1"), v.decode("latin-1"))
            for k, v in self._headers(websocket.headers.raw, _WS_OWN)
        ]
        subprotocols = websocket.scope.get("subprotocols") or None
        try:
            upstream = await ws_connect(
                url,
                additional_headers=headers,
                subprotocols=subprotocols,
                max_size=None,
                open_timeout=10,
                compression=None,
                origin=None,
            )
        except Exception as exc:  # any failure to connect means "unreachable" to the browser
            await websocket.accept()
            reason = f"{self.name} service at {self.base_url} not reachable ({type(exc).__name__})"
            await websocket.close(code=1011, reason=reason[:120])
            return
        await websocket.accept(subprotocol=upstream.subprotocol)

        async def client_to_upstream() -> None:
            while True:
                message = await websocket.receive()
                if message["type"] == "websocket.disconnect":
                    return
                if message.get("text") is not None:
                    await upstream.send(message["text"])
                elif message.get("bytes") is not None:
                    await upstream.send(message["bytes"])

        async def upstream_to_client() -> None:
            async for message in upstream:
                if isinstance(message, str):
                    await websocket.send_text(message)
                else:
                    await websocket.send_bytes(message)

        try:
            await pump_until_either_ends(
                client_to_upstream(),
                upstream_to_client(),
                closed=(ConnectionClosed, WebSocketDisconnect, RuntimeError),
            )
        finally:
            code = upstream.close_code
            await upstream.close()
            if websocket.client_state == WebSocketState.CONNECTED:
                with contextlib.suppress(RuntimeError, WebSocketDisconnect):
                    await websocket.close(code=code if code and code not in (1005, 1006, 1015) else 1000)


# ------------------------------------------------------------------------------------------- routes


@dataclass(frozen=True)
class Proxies:
    """The services behind the UI, made in the app's lifespan."""

    tasks: Upstream  # /api/*
    desktop: Upstream  # /vnc*


async def upstream(conn: HTTPConnection) -> Upstream | None:
    """The service a proxied path belongs to; None for a desktop the fleet does not have."""
    proxies: Proxies = conn.app.state.proxies
    name = conn.path_params.get("desktop")
    if name is not None:
        directory: DesktopDirectory = conn.app.state.directory
        url = await directory.url(name)
        return proxies.desktop.fleet_desktop(name, url) if url else None
    return proxies.tasks if conn.url.path.startswith(proxies.tasks.prefix + "/") else proxies.desktop


def forwarded_path(conn: HTTPConnection, target: Upstream | None) -> str | None:
    """The path to forward, or None when it is not one the UI forwards (see ``deskpilot.ui.paths``)."""
    path = paths.normalised(conn.scope)
    if path is None or target is None or not target.live_view_only:
        return path if target is not None else None
    inner = target.upstream_path(path)
    return path if paths.desktop_allows(inner, websocket=conn.scope["type"] == "websocket") else None


def not_found(conn: HTTPConnection) -> JSONResponse:
    return JSONResponse(task_error_body(404, f"{paths.raw_path(conn.scope)} is not served here"), 404)


Target = Annotated[Upstream | None, Depends(upstream)]


async def forward_http(request: Request, target: Target) -> Response:
    path = forwarded_path(request, target)
    if path is None or target is None:
        return not_found(request)
    if target.live_view_only and request.method not in ("GET", "HEAD"):  # the live view is files to read
        body = task_error_body(405, "the desktop's live view is read with GET")
        return JSONResponse(body, 405, headers={"Allow": "GET, HEAD"})
    return await target.forward_http(request, path)


async def forward_websocket(websocket: WebSocket, target: Target) -> None:
    path = forwarded_path(websocket, target)
    if path is None or target is None:
        await websocket.send_denial_response(not_found(websocket))
        return
    await target.forward_websocket(websocket, path)


router = APIRouter(include_in_schema=False)
for _path in (
    "/api/{path:path}",
    "/vnc",
    "/vnc/{path:path}",
    "/desktops/{desktop}/vnc",
    "/desktops/{desktop}/vnc/{path:path}",
):
    router.add_api_route(_path, forward_http, methods=METHODS)
    router.add_api_websocket_route(_path, forward_websocket)
