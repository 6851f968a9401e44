"""The live view at ``/vnc``: noVNC's page and files, and a same-origin WebSocket bridge to x11vnc.

x11vnc listens on a Unix socket in a directory only the display's owner (the desktop service's user) may enter
(``DESKTOP_VNC_SOCKET``; a VNC server on localhost, ``DESKTOP_VNC_PORT``, when the service runs on its own):
no local user or desktop program can reach it around the token, the view-only filter and the journal. The
browser reaches it through ``/vnc/websockify`` on the desktop port, so one port (and one origin) serves the
API and the view. No websockify process: the bridge below copies bytes
both ways until either side closes.

View only is enforced here, not by noVNC: a connection to ``/vnc/websockify`` is view-only unless it is
opened with ``?interactive=1``, and the bytes a view-only client sends pass through ``ViewOnlyFilter``, which
drops its input (keys, pointer, clipboard) and closes a connection it cannot follow. The query is a mode, not
a credential: the service's guard has already checked the caller (the token, or same-origin when no token is
configured). Interactive connections are forwarded as they come; a copy of what the client sent then goes to
``HumanInput``, which records the human's input in the desktop's journal (``human.py``): forwarding never
waits on the recording.
No other site may frame the live view: the service refuses framing on every response (``deny_framing``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

from fastapi import APIRouter, FastAPI, Request, WebSocket
from fastapi.responses import RedirectResponse
from fastapi.staticfiles import StaticFiles
from starlette.websockets import WebSocketDisconnect, WebSocketState

from deskpilot.bridge import pump_until_either_ends
from deskpilot.config import DesktopSettings
from deskpilot.desktop.human import HumanInput
from deskpilot.desktop.journal import Journal
from deskpilot.desktop.rfb import ProtocolError, ViewOnlyFilter

log = logging.getLogger(__name__)
NOVNC_DIR = Path("/usr/share/novnc")  # Debian's novnc files, extracted by scripts/install-system.sh
_CHUNK = 1 << 16


def viewer_url(root_path: str = "", *, view_only: bool = True) -> str:
    """noVNC's page with the settings the appliance wants; noVNC resolves ``path`` against the host root."""
    query = urlencode(
        {
            "autoconnect": "true",
            "reconnect": "true",
            "resize": "scale",
            "view_only": "true" if view_only else "false",
            "path": f"{root_path.strip('/')}/vnc/websockify".lstrip("/")
            + ("" if view_only else "?interactive=1"),
        }
    )
    return f"{root_path.rstrip('/')}/vnc/vnc.html?{query}"


def vnc_address(settings: DesktopSettings) -> str:
    return str(settings.vnc_socket) if settings.vnc_socket else f"{settings.vnc_host}:{settings.vnc_port}"


async def connect(settings: DesktopSettings) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    if settings.vnc_socket is not None:
        return await asyncio.open_unix_connection(settings.vnc_socket)
    return await asyncio.open_connection(settings.vnc_host, settings.vnc_port)


async def vnc_problem(settings: DesktopSettings) -> str | None:
    """The /health probe of the live view: None when x11vnc accepts a connection."""
    try:
        _, writer = await connect(settings)
    except OSError as exc:
        return f"the VNC server {vnc_address(settings)} is unreachable: {exc.strerror or exc}"
    writer.close()
    return None


async def bridge(
    ws: WebSocket, settings: DesktopSettings, *, interactive: bool = False, journal: Journal | None = None
) -> None:
    """Copy RFB bytes between the browser's WebSocket and x11vnc's socket until one side ends; the browser's
    input reaches x11vnc only on an ``interactive`` connection, and is recorded in ``journal``."""
    offered = [p.strip() for p in ws.headers.get("sec-websocket-protocol", "").split(",")]
    try:
        reader, writer = await connect(settings)
    except OSError as e:
        # The display (and x11vnc with it) is restarting; noVNC reconnects by itself.
        await ws.accept(subprotocol="binary" if "binary" in offered else None)
        reason = f"VNC server {vnc_address(settings)} unavailable: {e.strerror or e}"
        await ws.close(code=1011, reason=reason[:120])
        return
    await ws.accept(subprotocol="binary" if "binary" in offered else None)

    async def vnc_to_browser() -> None:
        while data := await reader.read(_CHUNK):
            await ws.send_bytes(data)

    view_only = None if interactive else ViewOnlyFilter()
    human = HumanInput(_recorder(journal), asyncio.get_running_loop()) if interactive and journal else None

    async def browser_to_vnc() -> None:
        while True:
            message = await ws.receive()
            if message["type"] == "websocket.disconnect":
                return
            data = message.get("bytes") or (message.get("text") or "").encode()
            if view_only is not None:
                try:
                    data = view_only.feed(data)
                except ProtocolError as exc:
                    log.warning("view-only VNC client closed: %s", exc, extra={"dropped": view_only.dropped})
                    await ws.close(code=1008, reason=str(exc)[:120])
                    return
            if data:
                writer.write(data)
                if human is not None:
                    human.feed(data)
                await writer.drain()

    try:
        await pump_until_either_ends(
            vnc_to_browser(), browser_to_vnc(), closed=(OSError, WebSocketDisconnect, RuntimeError)
        )
    finally:
        if human is not None:
            human.flush()  # what was still held back (text being typed, a click)
        writer.close()
        # The browser may already be gone: closing then raises, which is not an error of ours.
        if ws.client_state == WebSocketState.CONNECTED:
            with contextlib.suppress(WebSocketDisconnect, RuntimeError, OSError):
                await ws.close()


def _recorder(journal: Journal) -> Callable[[dict[str, Any], float], None]:
    def record(action: dict[str, Any], at: float) -> None:
        journal.record("human", action, {"ok": True}, at=at)

    return record


def router(settings: DesktopSettings) -> APIRouter:
    r = APIRouter()

    @r.get("/vnc", include_in_schema=False)
    @r.get("/vnc/", include_in_schema=False)
    def vnc_page(
        request: Request, interactive: bool = False, view_only: bool | None = None
    ) -> RedirectResponse:
        """The live view; read-only unless ``?interactive=1`` (or ``?view_only=false``)."""
        read_only = (not interactive) if view_only is None else view_only
        url = viewer_url(request.scope.get("root_path", ""), view_only=read_only)
        return RedirectResponse(url)

    @r.websocket("/vnc/websockify")
    async def vnc_websocket(ws: WebSocket, interactive: bool = False) -> None:
        """The RFB stream; the client's input is dropped unless opened with ``?interactive=1``."""
        controller = getattr(ws.app.state, "controller", None)  # none when the view is served alone
        journal = controller.journal if controller is not None else None
        await bridge(ws, settings, interactive=interactive, journal=journal)

    return r


def install(app: FastAPI, settings: DesktopSettings | None = None) -> None:
    """Add the routes, then noVNC's files under /vnc (after the routes, so they take precedence).

    When the VNC server is configured (the appliance sets ``DESKTOP_VNC_SOCKET``), /health also reports
    ``vnc``: whether x11vnc accepts connections. A service run on its own, without one, leaves it out.
    """
    settings = settings or DesktopSettings()
    app.include_router(router(settings))
    files = StaticFiles(directory=NOVNC_DIR, check_dir=False)
    app.mount("/vnc", files, name="vnc")
    probes = getattr(app.state, "health_probes", None)
    if probes is not None and {"vnc_port", "vnc_socket"} & settings.model_fields_set:
        probes["vnc"] = lambda: vnc_problem(settings)
