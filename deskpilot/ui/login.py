"""The login page: trade the token for a session cookie, and log out.

The cookie holds ``session_value(token)``, a value derived from the token (never the token itself), so
rotating the token ends every session. It is HttpOnly (no script reads it), SameSite=Strict (no other site's
page sends it), and Secure when the page came over https (as uvicorn's proxy_headers reports it).
"""

from __future__ import annotations

import logging
from typing import Annotated

from fastapi import APIRouter, Form, Query, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from deskpilot.security import SESSION_COOKIE, Credentials, session_cookie
from deskpilot.ui.render import render

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


@router.post("/login", response_class=HTMLResponse)
def login(
    request: Request,
    token: Annotated[str, Form()] = "",
    target: Annotated[str, Form(alias="next")] = "/",
) -> Response:
    credentials = _credentials(request)
    if not credentials.required:
        return RedirectResponse(safe_next(target), 303)
    if not credentials.accepts_bearer(token.strip()):  # constant time: digests compared with compare_digest
        client = request.client.host if request.client else ""
        log.warning("UI login refused: wrong token", extra={"client": client})
        error = "That is not the token: check it and try again."
        return render(request, "login.html", {"next": safe_next(target), "error": error}, 401)
    response = RedirectResponse(safe_next(target), 303)
    response.set_cookie(
        SESSION_COOKIE,
        request.app.state.session,
        path="/",
        httponly=True,
        samesite="strict",
        secure=_https(request),
    )
    return response


@router.post("/logout")
def logout(request: Request) -> Response:
    response = RedirectResponse("/login", 303)
    response.delete_cookie(SESSION_COOKIE, path="/", httponly=True, samesite="strict", secure=_https(request))
    return response
