"""The UI's sessions and its login throttling, over real HTTP and real WebSockets.

Sessions last ``UI_SESSION_TTL`` (the cookie's Max-Age, and the server refuses them after it), logging out
revokes them on every surface (pages, fragments, the proxied API and live view, WebSocket handshakes, and the
WebSockets they hold open), and a new process accepts none of an earlier one's. Wrong tokens, on the login
page or as a bearer, slow their client address down with an exponential back-off (429 with ``Retry-After``),
per address as the UI's server concluded it (``X-Forwarded-For`` only from a trusted proxy).
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest
import websockets
from websockets.exceptions import ConnectionClosed, InvalidStatus
from websockets.typing import Origin

from deskpilot.config import SecuritySettings, UISettings
from deskpilot.security import SESSION_COOKIE
from deskpilot.ui.server import create_app
from deskpilot.ui.sessions import ENDED_CODE
from testbed.net import ServerThread

TOKEN = "ui-session-token-0123456789abcdef"
PAGE = {"Accept": "text/html,application/xhtml+xml"}


@dataclass
class Holding:
    """An upstream whose WebSockets stay open (echoing) until the other side closes; it notes each close."""

    opened: int = 0
    closed: int = 0
    http: list[str] = field(default_factory=list)

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            while (message := await receive())["type"] != "lifespan.shutdown":
                await send({"type": message["type"] + ".complete"})
            await send({"type": "lifespan.shutdown.complete"})
            return
        if scope["type"] == "websocket":
            await receive()
            await send({"type": "websocket.accept"})
            self.opened += 1
            await send({"type": "websocket.send", "text": json.dumps({"path": scope["path"]})})
            while (message := await receive())["type"] != "websocket.disconnect":
                await send({"type": "websocket.send", "text": message.get("text") or ""})
            self.closed += 1
            return
        self.http.append(scope["path"])
        while (await receive()).get("more_body"):
            pass
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [(b"content-type", b"application/json")],
            }
        )
        await send({"type": "http.response.body", "body": b"[]"})


@dataclass
class Upstreams:
    agent: Holding
    desktop: Holding
    agent_url: str
    desktop_url: str

    def ui(self, **settings: Any) -> ServerThread:
        config = UISettings(tasks_url=self.agent_url, desktop_url=self.desktop_url, **settings)
        return ServerThread(create_app(config, SecuritySettings(token=TOKEN)))


@pytest.fixture(scope="module")
def upstreams() -> Iterator[Upstreams]:
    agent, desktop = Holding(), Holding()
    with ServerThread(agent) as a, ServerThread(desktop) as d:
        yield Upstreams(agent, desktop, a.url, d.url)


def log_in(url: str) -> str:
    """A new session's cookie value."""
    with httpx.Client(base_url=url) as c:
        r = c.post("/login", data={"token": TOKEN})
        assert r.status_code == 303, r.text
        return str(c.cookies[SESSION_COOKIE])


def client(url: str, cookie: str | None = None, **kwargs: Any) -> httpx.Client:
    cookies = {SESSION_COOKIE: cookie} if cookie else None
    return httpx.Client(base_url=url, cookies=cookies, timeout=10, **kwargs)


def ws_url(url: str, path: str) -> str:
    return url.replace("http://", "ws://") + path


def handshake(url: str, path: str, cookie: str) -> int:
    """The status of a WebSocket handshake with this session (101 when it opens)."""

    async def go() -> int:
        headers = {"Cookie": f"{SESSION_COOKIE}={cookie}"}
        try:
            async with websockets.connect(ws_url(url, path), additional_headers=headers, origin=Origin(url)):
                return 101
        except InvalidStatus as refused:
            return refused.response.status_code

    return asyncio.run(go())


SURFACES = ["/api/tasks", "/fragments/tasks", "/vnc/core/rfb.js", "/static/common.js"]


def refused_everywhere(url: str, cookie: str) -> None:
    """Every surface refuses the session: scripts get 401, pages go to the login page, WebSockets 401."""
    with client(url, cookie) as c:
        for path in SURFACES:
            assert c.get(path).status_code == 401, path
        page = c.get("/tasks/new", headers=PAGE)
        assert page.status_code == 303 and page.headers["location"].startswith("/login?next=")
        assert c.get("/login", headers=PAGE).status_code == 200  # the form, not "already logged in"
    assert handshake(url, "/api/ws", cookie) == 401
    assert handshake(url, "/vnc/websockify?interactive=1", cookie) == 401


def accepted_everywhere(url: str, cookie: str) -> None:
    with client(url, cookie) as c:
        for path in SURFACES:
            assert c.get(path).status_code == 200, path
    assert handshake(url, "/api/ws", cookie) == 101


# ------------------------------------------------------------------------------------------- sessions


def test_a_session_lasts_its_ttl_and_no_longer(upstreams: Upstreams) -> None:
    ttl = 2.0
    with upstreams.ui(session_ttl=ttl / 3600) as ui:
        with client(ui.url) as c:
            r = c.post("/login", data={"token": TOKEN})
            assert "Max-Age=2;" in r.headers["set-cookie"]
            cookie = str(c.cookies[SESSION_COOKIE])
        issued = time.monotonic()
        accepted_everywhere(ui.url, cookie)
        time.sleep(max(0.0, issued + ttl + 0.2 - time.monotonic()))
        refused_everywhere(ui.url, cookie)


def test_logging_out_revokes_the_session_on_every_surface(upstreams: Upstreams) -> None:
    with upstreams.ui() as ui:
        cookie, other = log_in(ui.url), log_in(ui.url)
        accepted_everywhere(ui.url, cookie)
        with client(ui.url, cookie) as c:
            r = c.post("/logout")
            assert r.status_code == 303 and r.headers["location"] == "/login"
            assert r.headers["set-cookie"].startswith(f'{SESSION_COOKIE}="";')  # the browser drops it
        # the browser dropped it; whoever kept a copy (a shared computer, a stolen cookie) has nothing
        refused_everywhere(ui.url, cookie)
        accepted_everywhere(ui.url, other)  # only that session ended
        with client(ui.url, cookie) as c:  # logging out again changes nothing
            assert c.post("/logout").status_code == 303
        accepted_everywhere(ui.url, other)


async def held_open(url: str, path: str, cookie: str) -> websockets.ClientConnection:
    headers = {"Cookie": f"{SESSION_COOKIE}={cookie}"}
    ws = await websockets.connect(ws_url(url, path), additional_headers=headers, origin=Origin(url))
    assert json.loads(await asyncio.wait_for(ws.recv(), 5))["path"]
    await ws.send("still here")
    assert await asyncio.wait_for(ws.recv(), 5) == "still here"
    return ws


async def closed_by_the_ui(ws: websockets.ClientConnection) -> int | None:
    with pytest.raises(ConnectionClosed):
        while True:
            await asyncio.wait_for(ws.recv(), 5)
    return ws.close_code


def test_logging_out_closes_the_websockets_the_session_holds_open(upstreams: Upstreams) -> None:
    with upstreams.ui() as ui:
        cookie, other = log_in(ui.url), log_in(ui.url)
        before = upstreams.agent.closed + upstreams.desktop.closed

        async def go() -> None:
            events = await held_open(ui.url, "/api/ws", cookie)
            screen = await held_open(ui.url, "/vnc/websockify?interactive=1", cookie)
            bystander = await held_open(ui.url, "/api/ws", other)
            async with httpx.AsyncClient(base_url=ui.url, cookies={SESSION_COOKIE: cookie}) as c:
                assert (await c.post("/logout")).status_code == 303
            assert await closed_by_the_ui(events) == ENDED_CODE
            assert await closed_by_the_ui(screen) == ENDED_CODE
            assert events.close_reason == "the session ended: log in again"
            await bystander.send("unaffected")
            assert await asyncio.wait_for(bystander.recv(), 5) == "unaffected"
            await bystander.close()

        asyncio.run(go())
        # the proxy closed its side upstream too: nothing keeps relaying for the ended session
        deadline = time.monotonic() + 5
        while upstreams.agent.closed + upstreams.desktop.closed < before + 3 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert upstreams.agent.closed + upstreams.desktop.closed == before + 3


def test_an_open_websocket_closes_when_its_session_expires(upstreams: Upstreams) -> None:
    with upstreams.ui(session_ttl=1.5 / 3600) as ui:
        cookie = log_in(ui.url)
        started = time.monotonic()

        async def go() -> int | None:
            ws = await held_open(ui.url, "/vnc/websockify", cookie)
            return await closed_by_the_ui(ws)

        assert asyncio.run(go()) == ENDED_CODE
        assert 1.0 < time.monotonic() - started < 4


def test_a_new_process_accepts_no_session_of_an_earlier_one(upstreams: Upstreams) -> None:
    """Revocations are kept in memory: a restart ends every session rather than forget one."""
    with upstreams.ui() as first:
        cookie = log_in(first.url)
        accepted_everywhere(first.url, cookie)
    with upstreams.ui() as second:
        refused_everywhere(second.url, cookie)
        accepted_everywhere(second.url, log_in(second.url))


def test_a_session_cannot_be_prolonged_or_forged(upstreams: Upstreams) -> None:
    with upstreams.ui(session_ttl=1.0) as ui:
        sid, issued, mac = log_in(ui.url).split(".")
        for forged in (
            f"{sid}.{int(issued) + 3_600_000}.{mac}",  # issued an hour later: an hour longer
            f"{sid}x.{issued}.{mac}",
            f"{sid}.{issued}.{mac[:-1]}0" if mac[-1] != "0" else f"{sid}.{issued}.{mac[:-1]}1",
            f"{sid}.{issued}",
            f"{sid}.{issued}.{mac}.{mac}",
        ):
            with client(ui.url, forged) as c:
                assert c.get("/api/tasks").status_code == 401, forged


# ------------------------------------------------------------------------------------------ throttling


def wrong(c: httpx.Client, **headers: str) -> httpx.Response:
    return c.post("/login", data={"token": "not-the-token"}, headers=headers)


def test_wrong_tokens_on_the_login_page_back_off_exponentially(upstreams: Upstreams) -> None:
    with upstreams.ui(login_free_attempts=2, login_max_delay=2) as ui, client(ui.url) as c:
        assert [wrong(c).status_code for _ in range(3)] == [401, 401, 401]  # two free, the third: 1 s
        early = wrong(c)
        assert early.status_code == 429 and early.headers["retry-after"] == "1"
        assert early.json() == {
            "statusCode": 429,
            "message": "too many wrong tokens from this address: try again in 1 s",
            "error": "Too Many Requests",
        }
        # while it waits, not even the right token is checked
        right = c.post("/login", data={"token": TOKEN})
        assert right.status_code == 429 and SESSION_COOKIE not in c.cookies
        time.sleep(1.05)
        assert wrong(c).status_code == 401  # the fourth: 2 s
        assert wrong(c).headers.get("retry-after") == "2"
        time.sleep(2.05)
        assert wrong(c).status_code == 401  # the fifth: 2 s again, the cap
        assert wrong(c).headers.get("retry-after") == "2"
        time.sleep(2.05)
        # the right token gets in and clears the count: two free wrong ones again
        assert c.post("/login", data={"token": TOKEN}).status_code == 303
        assert [wrong(c).status_code for _ in range(2)] == [401, 401]


def test_a_browser_is_told_on_the_login_page_how_long_to_wait(upstreams: Upstreams) -> None:
    with upstreams.ui(login_free_attempts=0) as ui, client(ui.url) as c:
        assert wrong(c, **PAGE).status_code == 401
        r = wrong(c, **PAGE)
        assert r.status_code == 429 and r.headers["retry-after"] == "1"
        assert r.headers["content-type"].startswith("text/html")
        assert 'id="login-error"' in r.text and "try again in 1 s" in r.text


def test_a_burst_of_guesses_gets_the_free_ones_and_one_more_checked(upstreams: Upstreams) -> None:
    """The finding: 177 guesses a second went through; now a burst has its token checked six times."""
    with upstreams.ui() as ui, client(ui.url) as c:
        started = time.monotonic()
        statuses = [wrong(c).status_code for _ in range(60)]
        elapsed = time.monotonic() - started
        assert set(statuses) == {401, 429}
        if elapsed < 1:  # a slow machine lets the 1 s wait pass once more
            assert statuses.count(401) == 6, statuses
        assert statuses.count(401) <= 6 + elapsed, (statuses, elapsed)


def test_each_client_address_waits_for_itself(upstreams: Upstreams) -> None:
    with upstreams.ui(login_free_attempts=1) as ui:
        with client(ui.url) as here:
            assert [wrong(here).status_code for _ in range(3)] == [401, 401, 429]
        # another address (a different loopback source) is not held up
        elsewhere = httpx.HTTPTransport(local_address="127.0.0.2")
        with client(ui.url, transport=elsewhere) as there:
            assert [wrong(there).status_code for _ in range(2)] == [401, 401]
            # an untrusted peer's X-Forwarded-For is ignored: it is still 127.0.0.2, now waiting
            assert wrong(there, **{"X-Forwarded-For": "192.0.2.55"}).status_code == 429
        # behind a trusted proxy (loopback, uvicorn's default), each forwarded client counts for itself
        with client(ui.url) as proxy:
            for address in ("192.0.2.10", "192.0.2.11"):
                forwarded = {"X-Forwarded-For": address}
                assert [wrong(proxy, **forwarded).status_code for _ in range(3)] == [401, 401, 429]


def test_a_bearer_token_shown_to_the_ui_counts_too(upstreams: Upstreams) -> None:
    with upstreams.ui(login_free_attempts=1) as ui, client(ui.url) as c:
        cookie = log_in(ui.url)
        guess = {"Authorization": "Bearer not-the-token"}
        assert [c.get("/api/tasks", headers=guess).status_code for _ in range(2)] == [401, 401]
        r = c.get("/api/tasks", headers=guess)
        assert r.status_code == 429 and r.headers["retry-after"] == "1"
        assert r.json()["statusCode"] == 429 and r.json()["error"] == "Too Many Requests"
        assert c.get("/health", headers=guess).status_code == 429  # no oracle there either

        async def ws() -> int:
            with pytest.raises(InvalidStatus) as refused:
                async with websockets.connect(ws_url(ui.url, "/api/ws"), additional_headers=guess):
                    pass
            return refused.value.response.status_code

        assert asyncio.run(ws()) == 429
        # a session from the same address is not held up: only guesses wait
        with client(ui.url, cookie) as browser:
            assert browser.get("/api/tasks").status_code == 200
        time.sleep(1.05)
        right = {"Authorization": f"Bearer {TOKEN}"}
        assert c.get("/api/tasks", headers=right).status_code == 200  # clears the count
        assert [c.get("/api/tasks", headers=guess).status_code for _ in range(3)] == [401, 401, 429]
