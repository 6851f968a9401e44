"""Who may use the UI when a token is configured: the login page, the session cookie, the guard's refusals,
and what the proxy sends upstream in the browser's name (the token, never the browser's cookie).

Two recording upstreams (testbed/recorder.py) stand for the agent and the desktop, so what reached
them is read back exactly.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import httpx
import pytest
import websockets
from websockets.exceptions import InvalidStatus
from websockets.typing import Origin

from deskpilot import __version__
from deskpilot.config import SecuritySettings, UISettings
from deskpilot.security import SESSION_COOKIE
from deskpilot.ui.login import safe_next
from deskpilot.ui.server import create_app
from deskpilot.ui.sessions import Sessions
from testbed.net import ServerThread
from testbed.recorder import Recorder

TOKEN = "ui-test-token-0123456789abcdef"
FRAME_HEADERS = {"x-frame-options": "DENY", "content-security-policy": "frame-ancestors 'none'"}
PAGE = {"Accept": "text/html,application/xhtml+xml"}


@dataclass
class Stack:
    url: str
    agent: Recorder
    desktop: Recorder

    def client(self, **kwargs) -> httpx.Client:
        return httpx.Client(base_url=self.url, timeout=10, **kwargs)

    @contextmanager
    def logged_in(self) -> Iterator[httpx.Client]:
        with self.client() as client:
            r = client.post("/login", data={"token": TOKEN, "next": "/"})
            assert r.status_code == 303, r.text
            yield client


@dataclass
class Upstreams:
    agent: Recorder
    desktop: Recorder
    agent_url: str
    desktop_url: str

    def ui(self, token: str | None = TOKEN, **config) -> ServerThread:
        settings = UISettings(tasks_url=self.agent_url, desktop_url=self.desktop_url)
        return ServerThread(create_app(settings, SecuritySettings(token=token)), **config)


@pytest.fixture(scope="module")
def upstreams() -> Iterator[Upstreams]:
    agent, desktop = Recorder(), Recorder()
    with ServerThread(agent) as a, ServerThread(desktop) as d:
        yield Upstreams(agent, desktop, a.url, d.url)


@pytest.fixture(scope="module")
def stack(upstreams: Upstreams) -> Iterator[Stack]:
    with upstreams.ui() as ui:
        yield Stack(ui.url, upstreams.agent, upstreams.desktop)


@pytest.fixture(autouse=True)
def fresh(upstreams: Upstreams) -> None:
    upstreams.agent.seen.clear()
    upstreams.desktop.seen.clear()


# ---------------------------------------------------------------------------------------- refusals


def test_open_without_a_session_the_login_page_what_it_loads_and_health(stack: Stack) -> None:
    with stack.client() as c:
        for path in ("/login", "/static/app.css", "/static/favicon.svg", "/health"):
            assert c.get(path, headers=PAGE).status_code == 200, path


def test_health_tells_the_status_to_anyone_and_the_version_to_a_session_or_the_token(stack: Stack) -> None:
    with stack.client() as c:
        for headers in ({}, {"Authorization": "Bearer wrong"}, {"Host": "10.1.2.3:9992"}):
            assert c.get("/health", headers=headers).json() == {"status": "ok"}, headers
        bearer = c.get("/health", headers={"Authorization": f"Bearer {TOKEN}"})
        assert bearer.json() == {"status": "ok", "version": __version__}
    with stack.logged_in() as c:
        assert c.get("/health").json() == {"status": "ok", "version": __version__}


def test_a_page_without_a_session_goes_to_the_login_page_and_back(stack: Stack) -> None:
    with stack.client() as c:
        r = c.get("/tasks/abc?x=1", headers=PAGE)
        assert r.status_code == 303
        assert r.headers["location"] == "/login?next=%2Ftasks%2Fabc%3Fx%3D1"
        r = c.post("/login", data={"token": TOKEN, "next": "/tasks/abc?x=1"})
        assert r.status_code == 303 and r.headers["location"] == "/tasks/abc?x=1"


@pytest.mark.parametrize(
    "path", ["/api/tasks", "/fragments/tasks", "/static/common.js", "/vnc/core/rfb.js", "/", "/tasks/new"]
)
def test_scripts_without_a_session_get_401_in_the_agent_error_shape(stack: Stack, path: str) -> None:
    with stack.client() as c:
        r = c.get(path)
        assert r.status_code == 401
        assert r.headers["www-authenticate"].startswith("Bearer")
        assert r.json()["statusCode"] == 401 and r.json()["error"] == "Unauthorized"
    assert stack.agent.seen == [] and stack.desktop.seen == []


def test_a_wrong_session_or_token_is_no_credential(stack: Stack) -> None:
    with stack.client(cookies={SESSION_COOKIE: Sessions("another token", 3600).issue()}) as c:
        assert c.get("/api/tasks").status_code == 401
    # the cookie of earlier versions (derived from the token, never expiring) is no longer a session
    v1 = hmac.new(TOKEN.encode(), b"deskpilot session v1", hashlib.sha256).hexdigest()
    with stack.client(cookies={SESSION_COOKIE: v1}) as c:
        assert c.get("/api/tasks").status_code == 401
    with stack.client(cookies={SESSION_COOKIE: TOKEN}) as c:  # the token is not the session
        assert c.get("/api/tasks").status_code == 401
    with stack.client(headers={"Authorization": "Bearer wrong"}) as c:
        assert c.get("/api/tasks").status_code == 401
    with stack.client(headers={"Authorization": f"Bearer {TOKEN}"}) as c:  # API clients may use the UI too
        assert c.get("/api/tasks").status_code == 200


def test_websockets_without_a_session_are_refused(stack: Stack) -> None:
    async def refused(path: str) -> int:
        with pytest.raises(InvalidStatus) as denied:
            async with websockets.connect(stack.url.replace("http", "ws") + path):
                pass
        return denied.value.response.status_code

    assert asyncio.run(refused("/api/ws")) == 401
    assert asyncio.run(refused("/vnc/websockify?interactive=1")) == 401
    assert stack.agent.seen == [] and stack.desktop.seen == []


def test_foreign_hosts_and_origins_are_refused_even_with_a_session(stack: Stack) -> None:
    with stack.logged_in() as c:
        assert c.get("/api/tasks", headers={"Host": "attacker.example"}).status_code == 400
        r = c.get("/", headers={"Host": "attacker.example", **PAGE})
        assert r.status_code == 400 and "DESKPILOT_ALLOWED_HOSTS" in r.text and "<h1>" in r.text
        foreign = {"Origin": "http://127.0.0.1:1", "Content-Type": "application/json"}
        assert c.post("/api/tasks", content=b"{}", headers=foreign).status_code == 403
        login = c.post("/login", data={"token": TOKEN}, headers={"Origin": "http://evil.example"})
        assert login.status_code == 403
        plain = c.post("/api/tasks", content=b"{}", headers={"Content-Type": "text/plain"})
        assert plain.status_code == 415
    assert stack.agent.seen == []


# ----------------------------------------------------------------------------------- the session


def test_login_sets_an_httponly_strict_session_cookie_and_logout_clears_it(stack: Stack) -> None:
    with stack.client() as c:
        wrong = c.post("/login", data={"token": "nope", "next": "/"})
        assert wrong.status_code == 401 and "not the token" in wrong.text
        assert "set-cookie" not in wrong.headers
        r = c.post("/login", data={"token": TOKEN, "next": "/tasks/new"})
        assert r.status_code == 303 and r.headers["location"] == "/tasks/new"
        cookie = r.headers["set-cookie"]
        assert cookie.startswith(f"{SESSION_COOKIE}={c.cookies[SESSION_COOKIE]};")
        attributes = {a.strip().split("=")[0].lower(): a for a in cookie.split(";")[1:]}
        assert {"httponly", "path", "samesite", "max-age"} <= attributes.keys()
        assert attributes["samesite"].strip().lower() == "samesite=strict"
        assert attributes["path"].strip() == "Path=/"
        assert attributes["max-age"].strip() == "Max-Age=43200"  # UI_SESSION_TTL: 12 h
        assert "secure" not in attributes  # plain http
        assert TOKEN not in cookie
        assert c.get("/login", headers=PAGE).status_code == 303  # already logged in
        r = c.post("/logout")
        assert r.status_code == 303 and r.headers["location"] == "/login"
        assert SESSION_COOKIE not in c.cookies
        assert c.get("/api/tasks").status_code == 401


def test_the_cookie_is_secure_when_a_trusted_proxy_says_https(upstreams: Upstreams) -> None:
    forwarded = {"X-Forwarded-Proto": "https"}
    with upstreams.ui() as ui, httpx.Client(base_url=ui.url) as c:  # uvicorn trusts 127.0.0.1
        r = c.post("/login", data={"token": TOKEN}, headers=forwarded)
        assert "secure" in r.headers["set-cookie"].lower()
    with upstreams.ui(forwarded_allow_ips="192.0.2.1") as ui, httpx.Client(base_url=ui.url) as c:
        r = c.post("/login", data={"token": TOKEN}, headers=forwarded)
        assert "secure" not in r.headers["set-cookie"].lower()  # anyone can send that header


@pytest.mark.parametrize(
    ("target", "where"),
    [
        ("/tasks/1", "/tasks/1"),
        ("//evil.example/", "/"),
        ("/\\evil.example", "/"),
        ("https://evil.example", "/"),
        ("/login", "/"),
        ("/a\nb", "/"),
    ],
)
def test_after_login_only_local_paths(target: str, where: str) -> None:
    assert safe_next(target) == where


# ------------------------------------------------------------------------------ what goes upstream


def test_the_proxy_sends_the_token_and_never_the_browsers_credentials(stack: Stack) -> None:
    with stack.logged_in() as c:
        c.headers.update({"Origin": stack.url, "X-Forwarded-For": "192.0.2.7", "X-Forwarded-Proto": "https"})
        assert c.post("/api/tasks", json={"description": "x"}).status_code == 200
        assert c.get("/vnc/core/rfb.js").status_code == 200
        assert c.get("/").status_code in (200, 502)  # the page itself reads the agent with the token too
    for seen in stack.agent.seen + stack.desktop.seen:
        assert seen.headers["authorization"] == [f"Bearer {TOKEN}"], seen.raw_path
        assert "cookie" not in seen.headers and "origin" not in seen.headers, seen.raw_path
        if "x-forwarded-for" in seen.headers:  # proxied (page rendering reads the agent directly)
            # once, as the UI's server concluded (uvicorn trusts this loopback client as a proxy)
            assert seen.headers["x-forwarded-for"] == ["192.0.2.7"]
            assert seen.headers["x-forwarded-proto"] == ["https"]
    assert {s.raw_path for s in stack.agent.seen} >= {"/tasks"}
    assert [s.raw_path for s in stack.desktop.seen] == ["/vnc/core/rfb.js"]


def test_websockets_are_relayed_with_the_token_not_the_cookie(stack: Stack) -> None:
    with stack.logged_in() as c:
        cookie = f"{SESSION_COOKIE}={c.cookies[SESSION_COOKIE]}"

    async def relay(path: str) -> None:
        headers = {"Cookie": cookie, "Authorization": "Bearer from-the-browser"}
        uri = stack.url.replace("http", "ws") + path
        async with websockets.connect(uri, additional_headers=headers, origin=Origin(stack.url)) as ws:
            await asyncio.wait_for(ws.recv(), 5)

    asyncio.run(relay("/api/ws"))
    asyncio.run(relay("/vnc/websockify?interactive=1"))
    for seen in stack.agent.seen + stack.desktop.seen:
        assert seen.kind == "websocket"
        assert seen.headers["authorization"] == [f"Bearer {TOKEN}"]
        assert "cookie" not in seen.headers and "origin" not in seen.headers
    assert len(stack.agent.seen) == len(stack.desktop.seen) == 1


# ---------------------------------------------------------------------------------------- framing


@pytest.mark.parametrize(
    "path", ["/login", "/", "/api/tasks", "/static/app.css", "/vnc/core/rfb.js", "/nope", "/health"]
)
def test_every_answer_forbids_framing_by_another_site(stack: Stack, path: str) -> None:
    for opened in (stack.client, stack.logged_in):
        with opened() as client:
            r = client.get(path, headers=PAGE)
            for name, value in FRAME_HEADERS.items():
                assert r.headers.get_list(name) == [value], (path, r.status_code, name)


def test_without_a_token_the_login_page_steps_aside(upstreams: Upstreams) -> None:
    with upstreams.ui(token=None) as ui, httpx.Client(base_url=ui.url) as c:
        r = c.get("/login?next=/tasks/new")
        assert r.status_code == 303 and r.headers["location"] == "/tasks/new"
        assert c.get("/api/tasks").status_code == 200
        assert "authorization" not in upstreams.agent.seen[-1].headers
        assert "Log out" not in c.get("/tasks/new").text


def test_a_ui_with_only_the_tokens_digest_refuses_to_start() -> None:
    with pytest.raises(ValueError, match="DESKPILOT_TOKEN"):
        create_app(UISettings(), SecuritySettings(token_sha256="0" * 64))
