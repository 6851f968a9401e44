"""The Guard on every surface of the desktop service, over real HTTP, the official MCP client and real
WebSockets (x11vnc behind /vnc/websockify): the token, Host, Origin and content type.

The service is given only the token's digest (``DESKPILOT_TOKEN_SHA256``), as in the appliance.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import httpx2
import pytest
import websockets
from mcp import Client
from mcp.client.sse import sse_client
from mcp.client.streamable_http import streamable_http_client
from websockets.exceptions import InvalidStatus
from websockets.typing import Subprotocol

from deskpilot import __version__
from deskpilot.computer.actions import ACTION_MODELS
from deskpilot.security import digest
from testbed.net import free_port
from testbed.security import BEARER, TOKEN, with_digest, with_token
from testbed.xvfb import Display
from tests.integration.desktop.conftest import Desktop, serve

ATTACKER = "attacker.example"
DASHBOARD = "https://dash.example"
FOREIGN = "http://evil.example"
PING = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
MCP_ACCEPT = {"Accept": "application/json, text/event-stream"}

# Every route but the probes', each with a request that answers at once (the SSE stream GET /mcp is
# only refused here; the MCP client opens it below).
ROUTES: list[tuple[str, str, dict[str, Any] | None]] = [
    ("POST", "/computer-use", {"action": "cursor_position"}),
    ("POST", "/compat/bytebot/computer-use", {"action": "cursor_position"}),
    ("POST", "/compat/bytebot/input-tracking/start", None),
    ("POST", "/compat/bytebot/input-tracking/stop", None),
    ("GET", "/compat/bytebot/mcp", None),
    ("POST", "/compat/bytebot/mcp", PING),
    ("POST", "/reset", {}),  # only refused here: test_reset.py resets a desktop of its own
    ("POST", "/command", {"command": "true"}),
    ("GET", "/journal", None),
    ("GET", "/journal/frames/" + "0" * 32, None),
    ("GET", "/mcp", None),
    ("POST", "/mcp", PING),
    ("DELETE", "/mcp", None),
    ("POST", "/mcp/messages/?session_id=0", PING),
    ("GET", "/vnc", None),
    ("GET", "/vnc/vnc.html", None),
    ("GET", "/vnc/core/rfb.js", None),
    ("GET", "/docs", None),
    ("GET", "/openapi.json", None),
    ("GET", "/metrics", None),
    ("GET", "/no-such-route", None),
]
ROUTE_IDS = [f"{method} {path}" for method, path, _ in ROUTES]
# What each answers with the token (the MCP routes answer the SDK's own errors to these bare requests).
OPENED = {"/computer-use": 200, "/vnc": 307, "/vnc/vnc.html": 200, "/vnc/core/rfb.js": 200}
OPENED |= {"/docs": 200, "/openapi.json": 200, "/metrics": 200, "/no-such-route": 404, "/command": 200}
OPENED |= {"/journal": 200, "/journal/frames/" + "0" * 32: 404}
OPENED |= {
    f"/compat/bytebot/{path}": 201 for path in ("computer-use", "input-tracking/start", "input-tracking/stop")
}


@pytest.fixture(scope="module")
def guarded(display: Display, desktop_home: Path, files_dir: Path, vnc_port: int) -> Iterator[Desktop]:
    security = with_digest(allowed_origins=[DASHBOARD])
    with serve(display, security, home=desktop_home, files_dir=files_dir, vnc_port=vnc_port) as desktop:
        yield desktop


def send(
    desktop: Desktop, method: str, path: str, body: dict[str, Any] | None = None, /, **headers: str
) -> httpx.Response:
    return desktop.http.request(method, desktop.url + path, json=body, headers=headers)


def move_to(desktop: Desktop, x: int, y: int) -> None:
    body = {"action": "move_mouse", "coordinates": {"x": x, "y": y}}
    assert send(desktop, "POST", "/computer-use", body, **BEARER).status_code == 200


def assert_refused(r: httpx.Response, status: int, fragment: str) -> None:
    assert r.status_code == status, r.text
    body = r.json()
    assert body["success"] is False and fragment in body["error"], body


# ------------------------------------------------------------------------------------------------ token


def test_the_routes_checked_are_every_route_of_the_service(guarded: Desktop) -> None:
    """A new endpoint cannot escape the checks below: each one the OpenAPI lists is in ROUTES."""
    spec = send(guarded, "GET", "/openapi.json", **BEARER).json()
    served = {
        (method.upper(), path.replace("{frame_id}", "0" * 32))
        for path, item in spec["paths"].items()
        for method in item
        if not path.startswith("/health")
    }
    assert served <= {(method, path) for method, path, _ in ROUTES}


@pytest.mark.parametrize(("method", "path", "body"), ROUTES, ids=ROUTE_IDS)
def test_every_route_wants_the_token(guarded: Desktop, method: str, path: str, body: Any) -> None:
    for credentials in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": f"Basic {TOKEN}"}):
        r = send(guarded, method, path, body, **MCP_ACCEPT, **credentials)
        assert_refused(r, 401, "Authorization: Bearer")
        assert r.headers["www-authenticate"].startswith("Bearer")


@pytest.mark.parametrize(("method", "path", "body"), [r for r in ROUTES if r[1] in OPENED])
def test_the_token_opens_them(guarded: Desktop, method: str, path: str, body: Any) -> None:
    r = send(guarded, method, path, body, **BEARER)
    assert r.status_code == OPENED[path], r.text
    if path == "/computer-use":
        assert r.json()["success"] is True and set(r.json()["data"]) == {"x", "y"}


@pytest.mark.parametrize("path", ["/health", "/health/live"])
def test_the_probes_need_no_token_and_accept_any_host(guarded: Desktop, path: str) -> None:
    for headers in ({}, {"Host": ATTACKER}, {"Host": "10.1.2.3:9990"}):
        r = send(guarded, "GET", path, **headers)
        assert r.status_code in (200, 503) and r.json()["status"] in ("ok", "degraded"), r.text
        assert TOKEN not in r.text and digest(TOKEN) not in r.text


def test_the_probes_tell_the_status_to_anyone_and_the_details_to_the_token(guarded: Desktop) -> None:
    wrong = {"Authorization": "Bearer wrong"}
    for headers in ({}, wrong, {"Host": "10.1.2.3:9990", **BEARER}):  # a foreign Host: no details either
        r = send(guarded, "GET", "/health", **headers)
        assert (r.status_code, r.json()) == (200, {"status": "ok"}), headers
        assert send(guarded, "GET", "/health/live", **headers).json() == {"status": "ok"}
    r = send(guarded, "GET", "/health", **BEARER)
    details = {"display": True, "vnc": True, "capture": "shm", "version": __version__}
    assert r.json() == {"status": "ok", **details}
    assert send(guarded, "GET", "/health/live", **BEARER).json() == {"status": "ok", "version": __version__}


def test_a_degraded_probe_says_why_only_to_the_token(display: Display, files_dir: Path) -> None:
    """No VNC server on the port: 503 to anyone (the probes' semantics), its address only with the token."""
    port = free_port()
    with serve(display, with_digest(), files_dir=files_dir, vnc_port=port) as desktop:
        r = send(desktop, "GET", "/health")
        assert (r.status_code, r.json()) == (503, {"status": "degraded"})
        r = send(desktop, "GET", "/health", **BEARER)
        assert r.status_code == 503 and r.json()["vnc"] is False
        assert f"127.0.0.1:{port}" in r.json()["problems"]["vnc"]
        assert send(desktop, "GET", "/health/live").status_code == 200


def test_an_open_service_tells_the_details_to_its_own_hosts_only(display: Display, files_dir: Path) -> None:
    with serve(display, files_dir=files_dir) as desktop:  # no token (make run)
        assert send(desktop, "GET", "/health").json()["version"] == __version__
        assert send(desktop, "GET", "/health", Host=ATTACKER).json() == {"status": "ok"}  # DNS rebinding


# ----------------------------------------------------------------------------------------------- framing


@pytest.mark.parametrize(
    ("method", "path", "body"),
    [*ROUTES, ("GET", "/redoc", None), ("GET", "/health", None), ("GET", "/health/live", None)],
    ids=[*ROUTE_IDS, "GET /redoc", "GET /health", "GET /health/live"],
)
def test_every_answer_refuses_framing(guarded: Desktop, method: str, path: str, body: Any) -> None:
    """Swagger UI in a frame of another site clickjacked POST /reset: no answer may be framed, the docs,
    the live view, refusals and errors included (tests/e2e/ui/test_framing.py shows it in Chromium)."""
    for headers in ({}, BEARER, {"Host": ATTACKER, **BEARER}, {"Origin": FOREIGN, **BEARER}):
        # streamed: the SSE streams (GET /mcp) answer their headers and go on; only those are read
        with guarded.http.stream(
            method, guarded.url + path, json=body, headers={**MCP_ACCEPT, **headers}
        ) as r:
            assert r.headers.get_list("x-frame-options") == ["DENY"], (r.status_code, headers)
            assert r.headers.get_list("content-security-policy") == ["frame-ancestors 'none'"], headers


# ------------------------------------------------------------------------------------------------- host


@pytest.mark.parametrize(("method", "path", "body"), ROUTES, ids=ROUTE_IDS)
@pytest.mark.parametrize("host", [ATTACKER, f"{ATTACKER}:9990"])
def test_a_foreign_host_is_refused_with_and_without_the_token(
    guarded: Desktop, method: str, path: str, body: Any, host: str
) -> None:
    for credentials in ({}, BEARER):
        r = send(guarded, method, path, body, Host=host, **MCP_ACCEPT, **credentials)
        assert_refused(r, 400, f"Host '{ATTACKER}' is not allowed")


def test_a_foreign_host_does_not_move_the_pointer(guarded: Desktop) -> None:
    move_to(guarded, 10, 10)
    body = {"action": "move_mouse", "coordinates": {"x": 500, "y": 500}}
    assert send(guarded, "POST", "/computer-use", body, Host=ATTACKER, **BEARER).status_code == 400
    assert guarded.x.pointer() == (10, 10)


# ----------------------------------------------------------------------------------------------- origin


def test_a_foreign_origin_changes_nothing(guarded: Desktop) -> None:
    move_to(guarded, 20, 20)
    move = {"action": "move_mouse", "coordinates": {"x": 600, "y": 600}}
    for origin in (FOREIGN, "null", f"http://127.0.0.1:{int(guarded.url.rsplit(':', 1)[1]) + 1}"):
        r = send(guarded, "POST", "/computer-use", move, Origin=origin, **BEARER)
        assert_refused(r, 403, f"origin {origin!r}")
    assert guarded.x.pointer() == (20, 20)
    for origin in (DASHBOARD, guarded.url):  # configured, and the service's own
        assert send(guarded, "POST", "/computer-use", move, Origin=origin, **BEARER).status_code == 200
    assert guarded.x.pointer() == (600, 600)


def test_a_foreign_origin_changes_nothing_through_the_bytebot_prefix(guarded: Desktop) -> None:
    move_to(guarded, 30, 30)
    move = {"action": "move_mouse", "coordinates": {"x": 700, "y": 700}}
    r = send(guarded, "POST", "/compat/bytebot/computer-use", move, Origin=FOREIGN, **BEARER)
    assert_refused(r, 403, f"origin {FOREIGN!r}")
    r = send(guarded, "POST", "/compat/bytebot/computer-use", move, Host=ATTACKER, **BEARER)
    assert_refused(r, 400, f"Host '{ATTACKER}' is not allowed")
    assert send(guarded, "POST", "/compat/bytebot/computer-use", move).status_code == 401
    assert guarded.x.pointer() == (30, 30)
    assert send(guarded, "POST", "/compat/bytebot/computer-use", move, **BEARER).status_code == 201
    assert guarded.x.pointer() == (700, 700)


def test_a_foreign_origin_may_read_but_gets_no_cors_header(guarded: Desktop) -> None:
    r = send(guarded, "GET", "/openapi.json", Origin=FOREIGN, **BEARER)
    assert r.status_code == 200 and "access-control-allow-origin" not in r.headers


def test_a_foreign_page_cannot_read_the_journal(guarded: Desktop) -> None:
    """What a human typed is in the journal: a foreign page's read is answered, but without a CORS header
    its script never sees it (and without the token it is refused above)."""
    move_to(guarded, 5, 5)
    for path in ("/journal", "/journal?since=0&limit=1"):
        r = send(guarded, "GET", path, Origin=FOREIGN, **BEARER)
        assert r.status_code == 200 and "access-control-allow-origin" not in r.headers
    r = send(guarded, "POST", "/computer-use", {"action": "cursor_position"}, Origin=FOREIGN, **BEARER)
    assert_refused(r, 403, "origin")


def test_the_mcp_sdk_checks_origins_from_the_same_settings(guarded: Desktop) -> None:
    """GET /mcp (the SSE stream) changes nothing, so the Guard lets any Origin through; the SDK's own
    check behind it refuses a foreign one and accepts the configured one."""

    def opens(origin: str) -> int:
        with guarded.http.stream("GET", f"{guarded.url}/mcp", headers={"Origin": origin, **BEARER}) as r:
            return r.status_code

    assert opens(FOREIGN) == 403
    assert opens(DASHBOARD) == 200


# ------------------------------------------------------------------------------------------ content type


@pytest.mark.parametrize(
    "kind", ["text/plain", "application/x-www-form-urlencoded", "multipart/form-data", ""]
)
def test_only_json_bodies_are_run(guarded: Desktop, files_dir: Path, kind: str) -> None:
    """A browser sends text/plain (and forms) cross-site without a preflight: nothing may run."""
    name = f"guard-{kind.replace('/', '-') or 'untyped'}.txt"
    body = b'{"action": "write_file", "path": "' + name.encode() + b'", "data": "aGk="}'
    headers = {"Content-Type": kind, **BEARER} if kind else BEARER
    r = guarded.http.post(f"{guarded.url}/computer-use", content=body, headers=headers)
    assert_refused(r, 415, "Content-Type must be application/json")
    assert not (files_dir / name).exists()
    headers = {"Content-Type": "application/json; charset=utf-8", **BEARER}
    assert guarded.http.post(f"{guarded.url}/computer-use", content=body, headers=headers).status_code == 200
    assert (files_dir / name).read_bytes() == b"hi"
    (files_dir / name).unlink()


# -------------------------------------------------------------------------------------------------- MCP


def recording_client(headers: dict[str, str], statuses: list[int]) -> httpx2.AsyncClient:
    async def record(response: httpx2.Response) -> None:
        statuses.append(response.status_code)

    return httpx2.AsyncClient(headers=headers, timeout=10, event_hooks={"response": [record]})


@asynccontextmanager
async def mcp_client(url: str, transport: str, headers: dict[str, str], statuses: list[int]) -> Any:
    """The official client over either transport, its HTTP client sending ``headers``."""
    if transport == "sse":
        factory = functools.partial(recording_client, headers, statuses)
        async with Client(
            sse_client(
                f"{url}/mcp", httpx_client_factory=lambda headers=None, timeout=None, auth=None: factory()
            )
        ) as client:
            yield client
    else:
        async with (
            recording_client(headers, statuses) as http,
            Client(streamable_http_client(f"{url}/mcp", http_client=http)) as client,
        ):
            yield client


@pytest.mark.parametrize("transport", ["sse", "streamable-http"])
def test_the_official_mcp_client_needs_the_token(guarded: Desktop, transport: str) -> None:
    async def connect(headers: dict[str, str], statuses: list[int]) -> int:
        async with mcp_client(guarded.url, transport, headers, statuses) as client:
            await client.call_tool("computer_move_mouse", {"coordinates": {"x": 77, "y": 88}})
            return len((await client.list_tools()).tools)

    refused: list[int] = []
    with pytest.raises(Exception):  # noqa: B017 (the transports raise different errors; the status says why)
        asyncio.run(asyncio.wait_for(connect({}, refused), 20))
    assert refused and set(refused) == {401}
    accepted: list[int] = []
    assert asyncio.run(asyncio.wait_for(connect(BEARER, accepted), 20)) == len(ACTION_MODELS)
    assert 401 not in accepted and guarded.x.pointer() == (77, 88)


# ------------------------------------------------------------------------------------------- WebSockets


VNC, CHANNEL = "/vnc/websockify", "/computer-use/ws"


def socket_to(desktop: Desktop, path: str, host: str | None = None, **kwargs: Any) -> Any:
    """A WebSocket to ``path`` on 127.0.0.1; ``host`` is the name its Host header gives."""
    port = int(desktop.url.rsplit(":", 1)[1])
    uri = f"ws://{host or '127.0.0.1'}:{port}{path}"
    return websockets.connect(
        uri, host="127.0.0.1", port=port, subprotocols=[Subprotocol("binary")], **kwargs
    )


def handshake_status(desktop: Desktop, host: str | None = None, path: str = VNC, **kwargs: Any) -> int:
    """101 when the socket opened and answered (x11vnc greeted, an action was done), else the HTTP status
    of the refusal."""

    async def attempt() -> int:
        try:
            async with socket_to(desktop, path, host, **kwargs) as ws:
                if path == VNC:
                    assert await asyncio.wait_for(ws.recv(), 5) == b"RFB 003.008\n"
                else:
                    await ws.send('{"action": "cursor_position"}')
                    assert '"status":200' in await asyncio.wait_for(ws.recv(), 5)
                return 101
        except InvalidStatus as exc:
            return exc.response.status_code

    return asyncio.run(attempt())


@pytest.mark.parametrize("path", [VNC, CHANNEL])
def test_the_websockets_need_the_token(guarded: Desktop, path: str) -> None:
    assert handshake_status(guarded, path=path) == 401
    assert handshake_status(guarded, path=path, additional_headers={"Authorization": "Bearer wrong"}) == 401
    assert handshake_status(guarded, path=path, additional_headers=BEARER) == 101


@pytest.mark.parametrize("path", [VNC, CHANNEL])
def test_the_websockets_check_host_and_origin(guarded: Desktop, path: str) -> None:
    assert handshake_status(guarded, ATTACKER, path, additional_headers=BEARER) == 400
    assert handshake_status(guarded, path=path, origin=FOREIGN, additional_headers=BEARER) == 403
    assert handshake_status(guarded, path=path, origin="null", additional_headers=BEARER) == 403
    assert handshake_status(guarded, path=path, origin=DASHBOARD, additional_headers=BEARER) == 101
    assert handshake_status(guarded, path=path, origin=guarded.url, additional_headers=BEARER) == 101


# ------------------------------------------------------------------------------------------------- logs


def test_no_credential_reaches_the_log(
    display: Display, files_dir: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Requests with the token, a wrong one and a refused one: no record holds either, nor the digest
    (the records are read before the log format's masking, which would hide the token anyway)."""
    caplog.set_level(logging.DEBUG)
    wrong = "wrong-token-8d1e4f0b2a"
    with serve(display, with_token(), files_dir=files_dir) as desktop:
        assert (
            send(desktop, "POST", "/computer-use", {"action": "cursor_position"}, **BEARER).status_code == 200
        )
        bad = send(desktop, "POST", "/computer-use", {"action": "fly"}, **BEARER)
        assert bad.status_code == 400
        assert send(desktop, "GET", "/docs", Authorization=f"Bearer {wrong}").status_code == 401
        assert send(desktop, "GET", "/docs", Host=ATTACKER, **BEARER).status_code == 400
    logged = "\n".join(f"{r.getMessage()} {vars(r)}" for r in caplog.records)
    assert any(getattr(r, "action", None) == "cursor_position" for r in caplog.records)  # it did log
    for secret in (TOKEN, wrong, digest(TOKEN)):
        assert secret not in logged
