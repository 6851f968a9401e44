"""No page of another origin can frame a service (clickjacking): in Chromium, a page on another port of
``localhost`` frames the API docs of the desktop and task services (Swagger UI and ReDoc: three clicks in a
framed Swagger UI sent ``POST /reset`` and wiped the home), noVNC's page and the UI, with no token set (as
``make run`` serves them) and with one. Every one of those frames holds the browser's error page; a page of
the attacker's own, framed beside them, loads (so a broken harness cannot pass for a refusal).

The UI shows the live view without a frame (noVNC's RFB module draws into a canvas of its own page), so
nothing is framed legitimately; test_pages.py shows that view working.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from playwright.sync_api import Browser, Page
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response
from starlette.routing import Route

from deskpilot.config import DesktopSettings, TaskSettings, UISettings
from deskpilot.desktop.api import create_app as desktop_app
from deskpilot.tasks.app import create_app as agent_app
from deskpilot.ui.server import create_app as ui_app
from testbed.net import ServerThread, free_port
from testbed.security import TOKEN, security, with_digest, with_token

# What the attacker frames, by name: each service's docs, noVNC's page (the desktop's and the UI's proxy of
# it), the UI's pages.
FRAMED = {
    "desktop-docs": ("desktop", "/docs"),
    "desktop-redoc": ("desktop", "/redoc"),
    "desktop-vnc": ("desktop", "/vnc/vnc.html"),
    "tasks-docs": ("tasks", "/docs"),
    "tasks-redoc": ("tasks", "/redoc"),
    "ui-tasks": ("ui", "/"),
    "ui-login": ("ui", "/login"),
    "ui-vnc": ("ui", "/vnc/vnc.html"),
}
REFUSED = "chrome-error://"  # the document Chromium puts in a frame it refused


def attacker(urls: dict[str, str]) -> Starlette:
    """The other origin: a page framing every target, and a page of its own (the control)."""

    async def page(request: Request) -> Response:
        frames = "".join(f'<iframe name="{name}" src="{url}"></iframe>' for name, url in urls.items())
        control = '<iframe name="control" src="/frame"></iframe>'
        return HTMLResponse(f"<!doctype html><title>elsewhere</title><body>{frames}{control}")

    async def frame(request: Request) -> Response:
        return HTMLResponse("<!doctype html><title>framed</title><p id=own>a frame of our own</p>")

    return Starlette(routes=[Route("/", page), Route("/frame", frame)])


def local(url: str) -> str:
    """The same server as ``localhost``: the attacker is then on the same site, on another origin."""
    return url.replace("127.0.0.1", "localhost")


@pytest.fixture(params=[None, TOKEN], ids=["open", "token"])
def services(
    request: pytest.FixtureRequest, tmp_path: Path, desktop_settings: DesktopSettings
) -> Iterator[dict[str, str]]:
    token: str | None = request.param
    agent_settings = TaskSettings(
        database_url=f"sqlite:///{tmp_path}/agent.db",
        worker_enabled=False,
        executor="",
        desktop_url=f"http://127.0.0.1:{free_port()}",
    )
    desktop = desktop_app(desktop_settings, security=with_digest() if token else security())
    agent = agent_app(agent_settings, security=with_token() if token else security())
    with ServerThread(desktop) as d, ServerThread(agent) as a:
        ui_settings = UISettings(tasks_url=a.url, desktop_url=d.url)
        with ServerThread(ui_app(ui_settings, with_token() if token else security())) as ui:
            yield {"desktop": local(d.url), "tasks": local(a.url), "ui": local(ui.url)}


def test_no_page_of_another_origin_can_frame_the_docs_the_live_view_or_the_ui(
    browser: Browser, services: dict[str, str]
) -> None:
    urls = {name: services[service] + path for name, (service, path) in FRAMED.items()}
    for name, url in urls.items():  # each answers as a page of its own
        assert httpx.get(url).status_code in (200, 303, 401), name
    with ServerThread(attacker(urls)) as evil:
        context = browser.new_context()
        try:
            page: Page = context.new_page()
            page.goto(local(evil.url) + "/")  # waits for the frames' load events
            frames = {f.name: f for f in page.frames if f.name}
            assert frames["control"].url.endswith("/frame"), "the attacker's own frame loads"
            assert frames["control"].locator("#own").count() == 1
            seen = {name: frames[name].url for name in FRAMED}
            refused = {name: url for name, url in seen.items() if url.startswith(REFUSED)}
            assert refused == seen, f"framed by another origin: {set(seen) - set(refused)}"
        finally:
            context.close()
