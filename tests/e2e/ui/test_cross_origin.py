"""A page of another localhost origin, opened in real browsers (Chromium and Firefox ESR), attacks the
services: it must change nothing and read nothing, with a token configured and without one.

The attacker's origin is on the same site as the UI (another port of ``localhost``), so the browser sends
the UI's SameSite=Strict session cookie with its requests: only the Origin checks stand between them and the
UI's proxy. Every attempt has a control aimed at the attacker's own server, which must succeed, so a failure
of the harness cannot pass for a refusal. That the UI itself keeps working under these checks (login, create,
live updates, takeover) is shown by test_login.py (with a token) and test_flow.py (without).
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import httpx
import pytest
from playwright.sync_api import Browser
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, PlainTextResponse, Response
from starlette.routing import Route, WebSocketRoute
from starlette.websockets import WebSocket

from deskpilot.config import DesktopSettings, SecuritySettings, TaskSettings, UISettings
from deskpilot.desktop.api import create_app as desktop_app
from deskpilot.security import digest
from deskpilot.tasks.app import create_app as agent_app
from deskpilot.ui.server import create_app as ui_app
from testbed.firefox import Firefox
from testbed.net import ServerThread, free_port

TOKEN = "e2e-cross-origin-token-7d3e91b0c2a4"

# The attacks, run in the attacker's page: each returns what the page could observe.
ATTACKS_JS = r"""
window.attack = async (t) => {
  const settle = (ms) => new Promise((r) => setTimeout(r, ms));
  const read = async (url, init) => {
    try { const r = await fetch(url, init); return r.type === 'opaque' ? 'opaque' : 'read ' + r.status; }
    catch (e) { return 'blocked'; }
  };
  const socket = (url) => new Promise((resolve) => {
    let opened = false;
    const s = new WebSocket(url);
    s.onopen = () => { opened = true; s.close(); resolve('open'); };
    s.onclose = () => { if (!opened) resolve('refused'); };
    setTimeout(() => resolve('timeout'), 8000);
  });
  const form = (url, enctype, fields) => new Promise((resolve) => {
    const name = 'sink' + Math.random().toString(36).slice(2);
    const frame = document.createElement('iframe');
    frame.name = name;
    document.body.append(frame);
    const f = document.createElement('form');
    Object.assign(f, {method: 'POST', action: url, enctype: enctype, target: name});
    for (const [k, v] of Object.entries(fields)) {
      const i = document.createElement('input');
      Object.assign(i, {type: 'hidden', name: k, value: v});
      f.append(i);
    }
    document.body.append(f);
    frame.onload = () => resolve('submitted');
    f.submit();
    setTimeout(() => resolve('timeout'), 8000);
  });
  const writeFile = (name) => JSON.stringify({action: 'write_file', path: name, data: 'cHduZWQ='});
  // A text/plain form whose body reads as JSON: name + "=" + value.
  const plainJson = (name) => {
    const body = writeFile(name);
    return {[body.slice(0, -1) + ',"x":"']: '"}'};
  };
  const out = {};
  for (const [key, base] of [['desktop', t.desktop], ['ui', t.ui]]) {
    out[key + ' no-cors write_file'] = await read(base + '/computer-use', {
      method: 'POST', mode: 'no-cors', credentials: 'include',
      headers: {'Content-Type': 'text/plain'}, body: writeFile('nocors-' + key + '.txt'),
    });
    out[key + ' CORS write_file'] = await read(base + '/computer-use', {
      method: 'POST', credentials: 'include',
      headers: {'Content-Type': 'application/json'}, body: writeFile('cors-' + key + '.txt'),
    });
    const plain = plainJson('form-' + key + '.txt');
    out[key + ' form write_file'] = await form(base + '/computer-use', 'text/plain', plain);
    out[key + ' live view socket'] = await socket(base.replace('http', 'ws') + '/vnc/websockify');
  }
  out['ui proxy traversal'] = await read(t.ui + '/vnc/..%2Fcomputer-use', {
    method: 'POST', mode: 'no-cors', credentials: 'include',
    headers: {'Content-Type': 'text/plain'}, body: writeFile('traversal.txt'),
  });
  for (const [key, url] of [['agent', t.agent + '/tasks'], ['ui', t.ui + '/api/tasks']]) {
    out[key + ' form task'] = await form(url, 'multipart/form-data', {description: 'cross-site ' + key});
    out[key + ' CORS read tasks'] = await read(url, {credentials: 'include'});
    out[key + ' CORS create task'] = await read(url, {
      method: 'POST', credentials: 'include',
      headers: {'Content-Type': 'application/json'}, body: JSON.stringify({description: 'cors ' + key}),
    });
  }
  out['agent events socket'] = await socket(t.agent.replace('http', 'ws') + '/ws');
  out['ui events socket'] = await socket(t.ui.replace('http', 'ws') + '/api/ws');
  // Controls, against the attacker's own server: these must work.
  out['control form'] = await form(t.self + '/sink', 'multipart/form-data', {description: 'control'});
  out['control read'] = await read(t.self + '/sink', {});
  out['control socket'] = await socket(t.self.replace('http', 'ws') + '/echo');
  // Framing: the UI in a frame of this page (the control frames a page of its own).
  const frames = [['ui', t.ui + '/'], ['vnc', t.ui + '/vnc/vnc.html'], ['control', t.self + '/frame']];
  for (const [key, url] of frames) {
    const frame = document.createElement('iframe');
    frame.name = 'frame-' + key;
    frame.src = url;
    document.body.append(frame);
  }
  await settle(1500);
  return out;
};
"""

EXPECTED = {
    "desktop no-cors write_file": "opaque",  # the browser hides the answer; the file is checked below
    "desktop CORS write_file": "blocked",
    "desktop form write_file": "submitted",
    "desktop live view socket": "refused",
    "ui no-cors write_file": "opaque",
    "ui CORS write_file": "blocked",
    "ui form write_file": "submitted",
    "ui live view socket": "refused",
    "ui proxy traversal": "opaque",
    "agent form task": "submitted",
    "agent CORS read tasks": "blocked",
    "agent CORS create task": "blocked",
    "ui form task": "submitted",
    "ui CORS read tasks": "blocked",
    "ui CORS create task": "blocked",
    "agent events socket": "refused",
    "ui events socket": "refused",
    "control form": "submitted",
    "control read": "read 200",
    "control socket": "open",
}


# The page a browser shows in a frame it refused: Chromium's, Firefox's (a CSP frame-ancestors refusal).
REFUSED_FRAME = ("chrome-error://", "about:neterror?e=cspBlocked")


@dataclass
class Targets:
    desktop: str
    agent: str
    ui: str
    self: str
    files: Path
    client: httpx.Client  # the agent's API, with the token when there is one
    token: str | None
    sink: list[str]


def attacker_app(sink: list[str]) -> Starlette:
    """The attacker's site: its page, a form sink and a WebSocket of its own (the controls)."""

    async def page(request: Request) -> Response:
        return HTMLResponse(f"<!doctype html><title>elsewhere</title><body><script>{ATTACKS_JS}</script>")

    async def sink_route(request: Request) -> Response:
        if request.method == "POST":
            sink.append((await request.form()).get("description") or "")  # type: ignore[arg-type]
        return PlainTextResponse("ok")

    async def frame(request: Request) -> Response:
        return HTMLResponse("<!doctype html><title>framed</title><p>a frame of our own</p>")

    async def echo(ws: WebSocket) -> None:
        await ws.accept()
        await ws.close()

    return Starlette(
        routes=[
            Route("/", page),
            Route("/sink", sink_route, methods=["GET", "POST"]),
            Route("/frame", frame),
            WebSocketRoute("/echo", echo),
        ]
    )


def local(url: str) -> str:
    """The same server under the name ``localhost``: the attacker and the UI are then one site."""
    return url.replace("127.0.0.1", "localhost")


@pytest.fixture(params=[None, TOKEN], ids=["open", "token"])
def targets(request, tmp_path, desktop_settings: DesktopSettings) -> Iterator[Targets]:
    token: str | None = request.param
    sink: list[str] = []
    agent_settings = TaskSettings(
        database_url=f"sqlite:///{tmp_path}/agent.db",
        worker_enabled=False,
        desktop_url=f"http://127.0.0.1:{free_port()}",
    )
    with pytest.MonkeyPatch.context() as env:
        if token:
            env.setenv("DESKPILOT_TOKEN_SHA256", digest(token))
        desktop = desktop_app(desktop_settings)
        env.delenv("DESKPILOT_TOKEN_SHA256", raising=False)
        if token:
            env.setenv("DESKPILOT_TOKEN", token)
        agent = agent_app(agent_settings)
        with ServerThread(desktop) as d, ServerThread(agent) as a:
            ui_settings = UISettings(tasks_url=a.url, desktop_url=d.url)
            headers = {"Authorization": f"Bearer {token}"} if token else {}
            with (
                ServerThread(ui_app(ui_settings, SecuritySettings(token=token))) as ui,
                ServerThread(attacker_app(sink)) as evil,
                httpx.Client(base_url=a.url, headers=headers, timeout=10) as client,
            ):
                assert desktop_settings.files_dir is not None
                yield Targets(
                    desktop=local(d.url),
                    agent=local(a.url),
                    ui=local(ui.url),
                    self=local(evil.url),
                    files=desktop_settings.files_dir,
                    client=client,
                    token=token,
                    sink=sink,
                )


class Page(Protocol):
    def goto(self, url: str) -> None: ...
    def js(self, expression: str) -> Any: ...
    def frame_urls(self) -> dict[str, str]: ...


class ChromiumPage:
    def __init__(self, browser: Browser) -> None:
        self.context = browser.new_context()
        self.page = self.context.new_page()

    def goto(self, url: str) -> None:
        self.page.goto(url)

    def js(self, expression: str) -> Any:
        return self.page.evaluate(f"async () => await ({expression})")

    def frame_urls(self) -> dict[str, str]:
        return {f.name: f.url for f in self.page.frames if f.name.startswith("frame-")}

    def close(self) -> None:
        self.context.close()


class FirefoxPage(Firefox):
    def frame_urls(self) -> dict[str, str]:
        # BiDi reports a refused frame under the URL it was refused; the document in it tells.
        tree = self.call("browsingContext.getTree", {"root": self.context})["contexts"][0]
        urls = {}
        for child in tree.get("children") or []:
            found = self.call(
                "script.evaluate",
                {
                    "expression": "[window.name, document.documentURI]",
                    "target": {"context": child["context"]},
                    "awaitPromise": False,
                },
            )["result"]["value"]
            name, uri = (item["value"] for item in found)
            if name.startswith("frame-"):
                urls[name] = uri
        return urls


@pytest.fixture(params=["chromium", "firefox"])
def page(request, browser: Browser) -> Iterator[Page]:
    if request.param == "chromium":
        chromium = ChromiumPage(browser)
        yield chromium
        chromium.close()
    else:
        firefox = FirefoxPage()
        yield firefox
        firefox.close()


def log_in(page: Page, t: Targets) -> None:
    """The victim's session: logged in to the UI in this browser (when a token is set)."""
    if not t.token:
        return
    page.goto(f"{t.ui}/login")
    status = page.js(
        f"fetch('/login', {{method: 'POST', body: new URLSearchParams({{token: {json.dumps(t.token)}}})}})"
        ".then((r) => r.status)"
    )
    assert status == 200
    assert page.js("fetch('/api/tasks').then((r) => r.status)") == 200, "the session works on its own origin"


def test_a_page_of_another_origin_changes_nothing_and_reads_nothing(
    page: Page, targets: Targets, caplog: pytest.LogCaptureFixture
) -> None:
    log_in(page, targets)
    page.goto(targets.self + "/")
    urls = {"desktop": targets.desktop, "agent": targets.agent, "ui": targets.ui, "self": targets.self}
    seen = page.js(f"attack({json.dumps(urls)})")

    assert seen == EXPECTED
    assert targets.sink == ["control"], "the control form reached the attacker's own server"
    time.sleep(0.5)  # let any request the browser sent in the background land
    assert sorted(p.name for p in targets.files.iterdir()) == [], "no file was written on the desktop"
    assert targets.client.get("/tasks").json() == [], "no task was created"
    errors = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert not errors, "a refusal is not an error of the service's"

    frames = page.frame_urls()
    assert frames["frame-control"].endswith("/frame"), frames
    for name in ("frame-ui", "frame-vnc"):
        # A refused frame holds the browser's own error page, never the UI.
        assert frames[name].startswith(REFUSED_FRAME), f"{name} was framed: {frames}"
