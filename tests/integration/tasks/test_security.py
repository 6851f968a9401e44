"""The Guard on every route of the task service and on /ws, over real HTTP and real WebSockets: the token,
Host, Origin, content type and CORS; and the token the task service sends to a guarded desktop."""

from __future__ import annotations

import json
import logging
import socket
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from websockets.exceptions import InvalidStatus
from websockets.sync.client import connect

from deskpilot import __version__
from deskpilot.config import DesktopSettings
from deskpilot.desktop.api import create_app as create_desktop_app
from deskpilot.tasks.desktops import Identity, Registry
from testbed.desktop_files import private_files_dir
from testbed.net import ServerThread
from testbed.security import BEARER, TOKEN, with_digest, with_token
from testbed.task_service import serve, with_store
from testbed.timing import wait_until
from testbed.xvfb import Display
from tests.integration.tasks.test_upload_desktop import ReadBack

ATTACKER = "attacker.example"
DASHBOARD = "https://dash.example"
FOREIGN = "http://evil.example"
ERROR_KEYS = {"statusCode", "message", "error"}

# A desktop of the fleet the routes below name (announced in the api fixture).
DESKTOP = Identity("guarded-desktop", (), "http://127.0.0.1:9")
# Every route but /health; {id} is a task of the test's own.
ROUTES: list[tuple[str, str, dict[str, Any] | None]] = [
    ("GET", "/tasks", None),
    ("POST", "/tasks", {"description": "refused"}),
    ("GET", "/tasks/in-progress", None),
    ("GET", "/tasks/models", None),
    ("GET", "/tasks/{id}", None),
    ("PATCH", "/tasks/{id}", {"priority": "URGENT"}),
    ("POST", "/tasks/{id}/takeover", None),
    ("POST", "/tasks/{id}/resume", None),
    ("GET", "/tasks/{id}/messages", None),
    ("POST", "/tasks/{id}/messages", {"content": "refused"}),
    ("GET", "/tasks/{id}/trajectory", None),
    ("DELETE", "/tasks/{id}", None),
    ("GET", "/desktops", None),
    ("POST", f"/desktops/{DESKTOP.name}/takeover", None),
    ("POST", f"/desktops/{DESKTOP.name}/resume", None),
    ("GET", "/docs", None),
    ("GET", "/redoc", None),
    ("GET", "/openapi.json", None),
    ("GET", "/metrics", None),
    ("GET", "/no-such-route", None),
]
ROUTE_IDS = [f"{method} {path}" for method, path, _ in ROUTES]


@pytest.fixture(scope="module")
def api(tmp_path_factory: pytest.TempPathFactory) -> Iterator[httpx.Client]:
    db = tmp_path_factory.mktemp("security") / "agent.db"
    with serve(f"sqlite:///{db}", security=with_token(allowed_origins=[DASHBOARD])) as client:
        with_store(f"sqlite:///{db}", lambda store: Registry(store).announce(DESKTOP, "w", 3600))
        yield client


@pytest.fixture
def task(api: httpx.Client) -> dict[str, Any]:
    r = api.post("/tasks", json={"description": "guarded"}, headers=BEARER)
    assert r.status_code == 201, r.text
    return dict(r.json())


def send(api: httpx.Client, method: str, path: str, body: Any = None, **headers: str) -> httpx.Response:
    return api.request(method, path, json=body, headers=headers)


def assert_refused(r: httpx.Response, status: int, fragment: str) -> None:
    assert r.status_code == status, r.text
    body = r.json()
    assert set(body) == ERROR_KEYS and body["statusCode"] == status and fragment in body["message"], body


def unchanged(api: httpx.Client, task: dict[str, Any]) -> bool:
    r = api.get(f"/tasks/{task['id']}", headers=BEARER)
    now = r.json()
    return bool(r.status_code == 200 and now["updatedAt"] == task["updatedAt"] and len(now["messages"]) == 1)


def task_count(api: httpx.Client) -> int:
    return int(api.get("/tasks", headers=BEARER).headers["x-total-count"])


# ------------------------------------------------------------------------------------------------ token


def test_the_routes_checked_are_every_route_of_the_service(api: httpx.Client) -> None:
    """A new endpoint cannot escape the checks below: each one the OpenAPI lists is in ROUTES."""
    spec = api.get("/openapi.json", headers=BEARER).json()
    served = {
        (method.upper(), path.replace("{task_id}", "{id}").replace("{name}", DESKTOP.name))
        for path, item in spec["paths"].items()
        for method in item
        if path != "/health"
    }
    assert served <= {(method, path) for method, path, _ in ROUTES}


@pytest.mark.parametrize(("method", "path", "body"), ROUTES, ids=ROUTE_IDS)
def test_every_route_wants_the_token(
    api: httpx.Client, task: dict, method: str, path: str, body: Any
) -> None:
    before = task_count(api)
    for credentials in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": f"Basic {TOKEN}"}):
        r = send(api, method, path.format(id=task["id"]), body, **credentials)
        assert_refused(r, 401, "Authorization: Bearer")
        assert r.headers["www-authenticate"].startswith("Bearer")
    assert unchanged(api, task) and task_count(api) == before


@pytest.mark.parametrize(("method", "path", "body"), ROUTES, ids=ROUTE_IDS)
def test_the_token_opens_them(api: httpx.Client, task: dict, method: str, path: str, body: Any) -> None:
    r = send(api, method, path.format(id=task["id"]), body, **BEARER)
    assert r.status_code == 404 if path == "/no-such-route" else r.status_code < 400, r.text


def test_the_probe_needs_no_token_and_accepts_any_host(api: httpx.Client) -> None:
    for headers in ({}, {"Host": ATTACKER}, {"Host": "10.1.2.3:9991"}):
        r = api.get("/health", headers=headers)
        assert r.status_code == 200 and r.json()["status"] == "ok"
        assert TOKEN not in r.text


def test_the_probe_tells_the_status_to_anyone_and_the_details_to_the_token(api: httpx.Client) -> None:
    for headers in ({}, {"Authorization": "Bearer wrong"}, {"Host": "10.1.2.3:9991", **BEARER}):
        r = api.get("/health", headers=headers)
        assert (r.status_code, r.json()) == (200, {"status": "ok"}), headers
    r = api.get("/health", headers=BEARER)
    assert r.status_code == 200
    assert r.json() == {"status": "ok", "version": __version__, "database": "sqlite", "worker": False}


# ----------------------------------------------------------------------------------------------- framing


@pytest.mark.parametrize(
    ("method", "path", "body"), [*ROUTES, ("GET", "/health", None)], ids=[*ROUTE_IDS, "GET /health"]
)
def test_every_answer_refuses_framing(
    api: httpx.Client, task: dict, method: str, path: str, body: Any
) -> None:
    """Swagger UI in a frame of another site clickjacks its buttons: no answer may be framed, the docs,
    refusals and CORS answers included (tests/e2e/ui/test_framing.py shows it in Chromium)."""
    url = path.format(id=task["id"])
    for headers in ({}, BEARER, {"Host": ATTACKER, **BEARER}, {"Origin": DASHBOARD, **BEARER}):
        r = send(api, method, url, body, **headers)
        assert r.headers.get_list("x-frame-options") == ["DENY"], (r.status_code, headers)
        assert r.headers.get_list("content-security-policy") == ["frame-ancestors 'none'"], headers
    r = preflight(api, DASHBOARD)
    assert r.status_code == 200 and r.headers.get_list("x-frame-options") == ["DENY"]


# ------------------------------------------------------------------------------------------------- host


@pytest.mark.parametrize(("method", "path", "body"), ROUTES, ids=ROUTE_IDS)
def test_a_foreign_host_is_refused_with_and_without_the_token(
    api: httpx.Client, task: dict, method: str, path: str, body: Any
) -> None:
    for credentials in ({}, BEARER):
        for host in (ATTACKER, f"{ATTACKER}:9991"):
            r = send(api, method, path.format(id=task["id"]), body, Host=host, **credentials)
            assert_refused(r, 400, f"Host '{ATTACKER}' is not allowed")
    assert unchanged(api, task)


# ----------------------------------------------------------------------------------------------- origin


def test_a_foreign_origin_changes_nothing(api: httpx.Client, task: dict) -> None:
    before = task_count(api)
    for origin in (FOREIGN, "null", f"http://{ATTACKER}"):
        for method, path, body in [r for r in ROUTES if r[0] not in ("GET",)]:
            r = send(api, method, path.format(id=task["id"]), body, Origin=origin, **BEARER)
            assert_refused(r, 403, f"origin {origin!r}")
        # an HTML form posted from another site (multipart, no preflight)
        r = api.post("/tasks", data={"description": "from a form"}, headers={"Origin": origin, **BEARER})
        assert_refused(r, 403, "origin")
    assert unchanged(api, task) and task_count(api) == before
    for origin in (DASHBOARD, str(api.base_url).rstrip("/")):  # configured, and the service's own
        r = send(api, "PATCH", f"/tasks/{task['id']}", {"priority": "HIGH"}, Origin=origin, **BEARER)
        assert r.status_code == 200 and r.json()["priority"] == "HIGH"


@pytest.mark.parametrize(
    ("method", "path", "body"),
    [("POST", "/tasks", b'{"description": "x"}'), ("PATCH", "/tasks/{id}", b'{"priority": "URGENT"}'),
     ("POST", "/tasks/{id}/messages", b'{"content": "x"}')],
)  # fmt: skip
def test_only_json_bodies_are_taken(
    api: httpx.Client, task: dict, method: str, path: str, body: bytes
) -> None:
    before = task_count(api)
    url = path.format(id=task["id"])
    for kind in ("text/plain", "text/plain; charset=utf-8", "application/x-www-form-urlencoded"):
        r = api.request(method, url, content=body, headers={"Content-Type": kind, **BEARER})
        assert_refused(r, 415, "Content-Type must be application/json")
    r = api.request(method, url, content=body, headers=BEARER)  # no type at all
    assert_refused(r, 415, "not 'missing'")
    assert unchanged(api, task) and task_count(api) == before
    r = api.request(method, url, content=body, headers={"Content-Type": "application/json", **BEARER})
    assert r.status_code in (200, 201), r.text


# ------------------------------------------------------------------------------------------------- CORS


def preflight(api: httpx.Client, origin: str) -> httpx.Response:
    headers = {
        "Origin": origin,
        "Access-Control-Request-Method": "POST",
        "Access-Control-Request-Headers": "authorization, content-type",
    }
    return api.options("/tasks", headers=headers)


def test_a_configured_origin_gets_cors_and_a_foreign_one_does_not(api: httpx.Client) -> None:
    allowed = preflight(api, DASHBOARD)
    assert allowed.status_code == 200
    assert allowed.headers["access-control-allow-origin"] == DASHBOARD
    assert "authorization" in allowed.headers["access-control-allow-headers"].lower()
    refused = preflight(api, FOREIGN)
    assert "access-control-allow-origin" not in refused.headers and refused.status_code >= 400
    r = api.get("/tasks", headers={"Origin": DASHBOARD, **BEARER})
    assert r.headers["access-control-allow-origin"] == DASHBOARD
    assert "x-total-count" in r.headers["access-control-expose-headers"].lower()
    r = api.get("/tasks", headers={"Origin": FOREIGN, **BEARER})
    assert r.status_code == 200 and "access-control-allow-origin" not in r.headers
    # the configured origin can read why it was refused
    r = api.get("/tasks", headers={"Origin": DASHBOARD})
    assert r.status_code == 401 and r.headers["access-control-allow-origin"] == DASHBOARD


# ---------------------------------------------------------------------------------------------------- /ws


def ws_status(api: httpx.Client, host: str | None = None, **kwargs: Any) -> int:
    """101 when /ws opened and delivered an event, else the HTTP status of the refusal."""
    port = api.base_url.port
    sock = socket.create_connection(("127.0.0.1", port), timeout=5)
    try:
        with connect(f"ws://{host or '127.0.0.1'}:{port}/ws", sock=sock, open_timeout=5, **kwargs) as ws:
            created = api.post("/tasks", json={"description": "watched"}, headers=BEARER).json()
            frame = json.loads(ws.recv(timeout=5))
            assert frame == {"event": "task_created", "data": created}
            return 101
    except InvalidStatus as exc:
        return exc.response.status_code
    finally:
        sock.close()


def test_the_websocket_needs_the_token(api: httpx.Client) -> None:
    assert ws_status(api) == 401
    assert ws_status(api, additional_headers={"Authorization": "Bearer wrong"}) == 401
    assert ws_status(api, additional_headers=BEARER) == 101


def test_the_websocket_checks_host_and_origin(api: httpx.Client) -> None:
    assert ws_status(api, ATTACKER, additional_headers=BEARER) == 400
    assert ws_status(api, origin=FOREIGN, additional_headers=BEARER) == 403
    assert ws_status(api, origin="null", additional_headers=BEARER) == 403
    assert ws_status(api, origin=DASHBOARD, additional_headers=BEARER) == 101
    assert ws_status(api, origin=str(api.base_url).rstrip("/"), additional_headers=BEARER) == 101


# ------------------------------------------------------------------------------------ the desktop's token


def test_the_task_service_sends_its_token_to_the_desktop(display: Display, tmp_path: Path) -> None:
    """A desktop that wants the token (given its digest, as in the appliance): the worker writes a task's
    upload there and the executor reads it back, both through AsyncDesktop."""
    executor = ReadBack()
    name = f"dp-{uuid.uuid4().hex[:8]}.txt"
    with private_files_dir() as files:
        desktop_app = create_desktop_app(
            DesktopSettings(display=display.name, files_dir=files), security=with_digest()
        )
        with (
            ServerThread(desktop_app) as desktop,
            serve(
                f"sqlite:///{tmp_path}/agent.db",
                executor,
                with_token(),
                worker_enabled=True,
                desktop_url=desktop.url,
                desktop_files_dir=str(files),
            ) as api,
        ):
            bare = httpx.post(f"{desktop.url}/computer-use", json={"action": "cursor_position"})
            assert bare.status_code == 401
            upload = [("files", (name, b"hi"))]
            r = api.post("/tasks", data={"description": "read it"}, files=upload, headers=BEARER)
            assert r.status_code == 201, r.text
            url = f"/tasks/{r.json()['id']}"
            wait_until(lambda: api.get(url, headers=BEARER).json()["status"] in ("COMPLETED", "FAILED"), 30)
            assert api.get(url, headers=BEARER).json()["status"] == "COMPLETED"
            assert (files / name).read_bytes() == b"hi"
            assert executor.seen == {str(files / name): b"hi"}


# ------------------------------------------------------------------------------------------------- logs


def test_no_credential_reaches_the_log(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    wrong = "wrong-token-8d1e4f0b2a"
    with serve(f"sqlite:///{tmp_path}/agent.db", security=with_token()) as api:
        assert api.post("/tasks", json={"description": "logged"}, headers=BEARER).status_code == 201
        assert api.get("/tasks", headers={"Authorization": f"Bearer {wrong}"}).status_code == 401
        assert api.get("/tasks", headers={"Host": ATTACKER, **BEARER}).status_code == 400
        plain = {"Content-Type": "text/plain", **BEARER}
        assert api.post("/tasks", content=b"{", headers=plain).status_code == 415
    logged = "\n".join(f"{r.getMessage()} {vars(r)}" for r in caplog.records)
    assert "task created" in logged
    assert TOKEN not in logged and wrong not in logged
