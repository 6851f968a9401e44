"""The UI in front of a fleet: the Desktops page lists what the real task service's registry holds, and
each desktop's live view is proxied at /desktops/<name>/vnc to the URL that desktop announced (HTTP and
WebSocket), with the same path rules as /vnc; a name the fleet does not have is a 404, never a request
elsewhere. The desktops are small real servers that say who they are."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Iterator

import httpx
import pytest
from fastapi import FastAPI, WebSocket
from fastapi.responses import PlainTextResponse
from websockets.sync.client import connect
from websockets.typing import Origin

from deskpilot.config import UISettings
from deskpilot.tasks.desktops import Identity, Registry
from deskpilot.tasks.store import Store
from deskpilot.ui.server import create_app
from testbed.net import ServerThread
from testbed.task_service import serve


def desktop_app(name: str) -> FastAPI:
    app = FastAPI()

    @app.get("/vnc/core/rfb.js")
    def rfb() -> PlainTextResponse:
        return PlainTextResponse(f'export default "{name}";', media_type="text/javascript")

    @app.post("/vnc/core/rfb.js")
    def not_for_writing() -> PlainTextResponse:  # the proxy must never send this
        return PlainTextResponse("written", status_code=200)

    @app.websocket("/vnc/websockify")
    async def bridge(ws: WebSocket) -> None:
        await ws.accept()
        await ws.send_text(f"{name}:{ws.url.query}")
        await ws.close()

    @app.get("/computer-use")  # not the live view: never forwarded
    def other() -> PlainTextResponse:
        return PlainTextResponse("leaked")

    return app


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    """(UI URL, URL of desk-b) with a real task service whose registry has desk-a and desk-b."""
    db_url = f"sqlite:///{tmp_path_factory.mktemp('fleet')}/agent.db"
    with (
        ServerThread(desktop_app("desk-a")) as a,
        ServerThread(desktop_app("desk-b")) as b,
        serve(db_url) as api,
    ):

        async def announce() -> None:
            store = await Store.open(db_url)
            try:
                registry = Registry(store)
                await registry.announce(Identity("desk-a", ("gpu",), a.url), "wa", 600)
                await registry.announce(Identity("desk-b", (), b.url), "wb", 600, problem="display lost")
            finally:
                await store.close()

        asyncio.run(announce())
        settings = UISettings(tasks_url=str(api.base_url), desktop_url="http://127.0.0.1:9")
        with ServerThread(create_app(settings)) as ui:
            yield ui.url, b.url


def test_the_desktops_page_lists_the_fleet_with_states(fleet: tuple[str, str]) -> None:
    ui, _ = fleet
    page = httpx.get(f"{ui}/desktops").text
    rows = re.findall(r'<tr data-desktop="([^"]+)" data-state="([^"]+)"', page)
    assert rows == [("desk-a", "idle"), ("desk-b", "unhealthy")]
    assert "display lost" in page and 'href="/desktops/desk-a"' in page
    fragment = httpx.get(f"{ui}/fragments/desktops").text
    assert re.findall(r'data-desktop="([^"]+)"', fragment) == ["desk-a", "desk-b"]
    one = httpx.get(f"{ui}/desktops/desk-a")
    assert one.status_code == 200 and 'data-base="/desktops/desk-a/vnc"' in one.text
    assert httpx.get(f"{ui}/desktops/nowhere").status_code == 404


def test_each_desktops_live_view_is_proxied_to_the_url_it_announced(fleet: tuple[str, str]) -> None:
    ui, _ = fleet
    for name in ("desk-a", "desk-b"):
        r = httpx.get(f"{ui}/desktops/{name}/vnc/core/rfb.js")
        assert r.status_code == 200 and r.text == f'export default "{name}";'
        ws_url = ui.replace("http://", "ws://") + f"/desktops/{name}/vnc/websockify?interactive=1"
        with connect(ws_url, origin=Origin(ui)) as ws:
            assert ws.recv(timeout=5) == f"{name}:interactive=1"


@pytest.mark.parametrize(
    "path",
    [
        "/desktops/nowhere/vnc/core/rfb.js",  # not in the fleet
        "/desktops/desk-a/computer-use",  # not the live view
        "/desktops/desk-a/vnc/..%2F..%2Fcomputer-use",  # an encoded way out
        "/desktops/desk%2Da/vnc/core/rfb.js",
        "/desktops/desk-a/vnc/../computer-use",
        "/desktops/127.0.0.1:1/vnc/core/rfb.js",  # a place, not a name
    ],
)
def test_what_is_not_a_fleet_desktops_live_view_is_not_forwarded(fleet: tuple[str, str], path: str) -> None:
    ui, _ = fleet
    r = httpx.get(ui + path)
    assert r.status_code == 404, (path, r.status_code, r.text)
    assert "leaked" not in r.text


def test_a_desktops_live_view_is_read_only_over_http(fleet: tuple[str, str]) -> None:
    ui, _ = fleet
    r = httpx.post(f"{ui}/desktops/desk-a/vnc/core/rfb.js", headers={"origin": ui}, json={})
    assert r.status_code == 405
