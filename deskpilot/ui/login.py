"""The login page: trade the token for a session cookie, and log out.

The cookie holds a session (``deskpilot.ui.sessions``): a random id and its issue time, signed with a key
derived from the token (never the token itself), so rotating the token ends every session. It lasts
``UI_SESSION_TTL`` hours (its Max-Age, and the server refuses it after that), and logging out revokes it on
the server, not only in the browser. It is HttpOnly (no script reads it), SameSite=Strict (no other site's
page sends it), and Secure when the page came over https (as uvicorn's proxy_headers reports it).

Wrong tokens slow the client's address down (``deskpilot.ui.throttle``): after a few, each try must wait
1 s, 2 s, 4 s ... and one made too early is answered 429 with ``Retry-After``, without the token being
checked.
"""

from __future__ import annotations

import logging
from typing import Annotated

from fastapi import APIRouter, Form, Query, Request
from fastapi.responses import HTMLResponse, JSONResponse, RedirectResponse, Response

from deskpilot.errors import task_error_body
from deskpilot.security import SESSION_COOKIE, Credentials, session_cookie
from deskpilot.ui.guard import too_many
from deskpilot.ui.render import render
from deskpilot.ui.sessions import Sessions
from deskpilot.ui.throttle import Throttle, client_key

log = logging.getLogger(__name__)
router = APIRouter(include_in_schema=False)


def safe_next(target: str) -> str:
    """Where to go after logging in: a path on this server, never another site (``//evil``, ``/\\evil``)."""
    if not target.startswith("/") or target.startswith(("//", "/\\")) or target.startswith("/login"):
        return "/"
    return target if all(0x20 < ord(c) < 0x7F for c in target) else "/"


def _credentials(request: Request) -> Credentials:
    credentials: Credentials = request.app.state.credentials
    return credentials


def _sessions(request: Request) -> Sessions | None:
    sessions: Sessions | None = request.app.state.sessions
    return sessions


def _throttle(request: Request) -> Throttle:
    throttle: Throttle = request.app.state.throttle
    return throttle


def _https(request: Request) -> bool:
    return request.url.scheme == "https"


@router.get("/login", response_class=HTMLResponse)
def login_page(request: Request, target: Annotated[str, Query(alias="next")] = "/") -> Response:
    """The form; straight on when no token is configured or the session is already valid."""
    credentials = _credentials(request)
    presented = session_cookie(dict(request.headers))
    if not credentials.required or (presented is not None and credentials.accepts_session(presented)):
        return RedirectResponse(safe_next(target), 303)
    return render(request, "login.html", {"next": safe_next(target), "error": None})


def _wait_answer(request: Request, target: str, wait: float) -> Response:
    """429: the login page saying how long to wait for a browser, the task service's error shape for a
    script."""
    status, message, headers = too_many(wait)
    if "text/html" not in request.headers.get("accept", ""):
        return JSONResponse(task_error_body(status, message), status, headers)
    error = f"Too many wrong tokens from your address: try again in {headers['Retry-After']} s."
    page = render(request, "login.html", {"next": safe_next(target), "error": error}, status)
    page.headers.update(headers)
    return page


@router.post("/login", response_class=HTMLResponse)
async def login(
    request: Request,
    token: Annotated[str, Form()] = "",
    target: Annotated[str, Form(alias="next")] = "/",
) -> Response:
    # async, on the event loop: from the throttle's check to its count nothing else runs
    credentials, sessions = _credentials(request), _sessions(request)
    if not credentials.required or sessions is None:
        return RedirectResponse(safe_next(target), 303)
    throttle, address = _throttle(request), client_key(request.scope)
    wait = throttle.wait(address)
    if wait > 0:
        return _wait_answer(request, target, wait)
    if not credentials.accepts_bearer(token.strip()):  # constant time: digests compared with compare_digest
        delay = throttle.failed(address)
        log.warning("UI login refused: wrong token", extra={"client": address, "wait_s": delay})
        error = "That is not the token: check it and try again."
        return render(request, "login.html", {"next": safe_next(target), "error": error}, 401)
    throttle.succeeded(address)
    response = RedirectResponse(safe_next(target), 303)
    response.set_cookie(
        SESSION_COOKIE,
        sessions.issue(),
        max_age=sessions.max_age,
        path="/",
        httponly=True,
        samesite="strict",
        secure=_https(request),
    )
    return response


@router.post("/logout")
async def logout(request: Request) -> Response:
    """Revoke the session (every surface refuses it from now on, its WebSockets are closed) and drop the
    cookie."""
    sessions = _sessions(request)
    presented = session_cookie(dict(request.headers))
    session = sessions.session(presented) if sessions is not None and presented is not None else None
    if sessions is not None and session is not None:
        sessions.revoke(session)
        log.info("UI session ended: logged out", extra={"client": client_key(request.scope)})
    response = RedirectResponse("/login", 303)
    response.delete_cookie(SESSION_COOKIE, path="/", httponly=True, samesite="strict", secure=_https(request))
    return response
