"""Who may use the UI: the Guard every service runs (``deskpilot.security``), with the UI's session cookie.

When a token is configured, every page, fragment, static file and proxied path needs the session the login
page sets (or the bearer token); the login page and what it loads stay open, as does ``/health``. The Host
and Origin checks apply to every path, the login page included. A refusal is answered as the caller can use
it: in the task service's error shape for scripts (``/api``, ``/fragments``, anything but a page), as a
redirect to the login page for a page opened without a session, as a short HTML page for other refused pages.

A session is checked on every request (``deskpilot.ui.sessions``: signed, unexpired, not revoked), and a
WebSocket opened with one is closed when it ends. A bearer token shown to the UI counts as a login attempt:
wrong ones slow its client address down like the login page's (``deskpilot.ui.throttle``, 429).
"""

from __future__ import annotations

import math
from dataclasses import replace
from html import escape
from urllib.parse import quote

from starlette.datastructures import Headers
from starlette.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from starlette.types import ASGIApp, Receive, Scope, Send

from deskpilot.config import SecuritySettings
from deskpilot.errors import reason_phrase, task_error_body
from deskpilot.security import (
    Credentials,
    Guard,
    Policy,
    Refusal,
    SessionCheck,
    bearer,
    policy_for,
    session_cookie,
)
from deskpilot.ui.sessions import Session, Sessions, bound
from deskpilot.ui.throttle import Throttle, client_key

# Open without a session (the Host and Origin checks still apply): the login page and what it loads.
PUBLIC_PATHS = frozenset({"/login", "/logout", "/static/app.css", "/static/favicon.svg"})
FORM = "application/x-www-form-urlencoded"
SCRIPT_PREFIXES = ("/api/", "/fragments/")


def ui_policy(security: SecuritySettings, sessions: SessionCheck | None = None) -> Policy:
    """The UI's policy: sessions accepted; task creation may upload files, the login page posts a form."""
    return policy_for(
        "ui",
        security,
        sessions=sessions,
        other_types={"/api/tasks": ("multipart/form-data",), "/login": (FORM,), "/logout": (FORM,)},
    )


def ui_access(
    security: SecuritySettings, session_hours: float = 12.0
) -> tuple[Policy, str | None, Sessions | None]:
    """The UI's policy, its token (it signs sessions with it and sends it upstream) and its sessions."""
    token = security.token_value()
    sessions = Sessions(token, session_hours * 3600) if token else None
    policy = ui_policy(security, sessions)
    if policy.credentials.required and not token:
        raise ValueError("the UI needs DESKPILOT_TOKEN itself, not only DESKPILOT_TOKEN_SHA256")
    return policy, token, sessions


def _headers(scope: Scope) -> dict[str, str]:
    return {k.decode("latin-1"): v.decode("latin-1") for k, v in scope["headers"]}


def too_many(wait: float) -> tuple[int, str, dict[str, str]]:
    """The answer to a client that must wait before trying a token again."""
    seconds = max(1, math.ceil(wait))
    message = f"too many wrong tokens from this address: try again in {seconds} s"
    return 429, message, {"Retry-After": str(seconds)}


class ThrottledGuard(Guard):
    """The Guard, where a bearer token counts as a login attempt of the client's address."""

    def __init__(self, app: ASGIApp, policy: Policy, refuse: Refusal, throttle: Throttle | None) -> None:
        super().__init__(app, policy, refuse)
        self.throttle = throttle

    def verdict(self, scope: Scope) -> tuple[int, str, dict[str, str]] | None:
        token = bearer(_headers(scope))
        if self.throttle is not None and token is not None and self.policy.credentials.required:
            address = client_key(scope)
            wait = self.throttle.wait(address)
            if wait > 0:  # not even checked: a guess gets no answer before its time
                return too_many(wait)
            if self.policy.credentials.accepts_bearer(token):
                self.throttle.succeeded(address)
            else:
                self.throttle.failed(address)
        return super().verdict(scope)


class UIGuard:
    """The Guard, with the public paths checked without the token requirement; a WebSocket opened with a
    session (not the token) is closed when the session ends (``deskpilot.ui.sessions.bound``)."""

    def __init__(
        self,
        app: ASGIApp,
        policy: Policy,
        sessions: Sessions | None = None,
        throttle: Throttle | None = None,
    ) -> None:
        self.app = app
        self.sessions = sessions
        self.credentials = policy.credentials
        self.private = ThrottledGuard(self._bound, policy, refusal, throttle)
        self.public = Guard(app, replace(policy, credentials=Credentials()), refusal)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        guard = self.public if scope.get("path") in PUBLIC_PATHS else self.private
        await guard(scope, receive, send)

    def cookie_session(self, scope: Scope) -> Session | None:
        """The session a request that passed the guard rests on: None when it showed the token."""
        if self.sessions is None:
            return None
        headers = _headers(scope)
        token = bearer(headers)
        if token is not None and self.credentials.accepts_bearer(token):
            return None
        value = session_cookie(headers)
        return self.sessions.session(value) if value is not None else None

    async def _bound(self, scope: Scope, receive: Receive, send: Send) -> None:
        session = self.cookie_session(scope) if scope["type"] == "websocket" else None
        if session is None or self.sessions is None:
            await self.app(scope, receive, send)
            return
        await bound(self.app, scope, receive, send, self.sessions.ended(session))


def wants_page(scope: Scope) -> bool:
    """A browser opening a page (not a script's fetch of data or a fragment)."""
    if scope.get("method") not in ("GET", "HEAD") or str(scope["path"]).startswith(SCRIPT_PREFIXES):
        return False
    return "text/html" in Headers(scope=scope).get("accept", "")


def login_url(scope: Scope) -> str:
    """The login page, with where to go after it."""
    target = str(scope["path"])
    if scope.get("query_string"):
        target += "?" + scope["query_string"].decode("latin-1")
    return "/login?next=" + quote(target, safe="")


def refusal(status: int, message: str, headers: dict[str, str]) -> ASGIApp:
    async def respond(scope: Scope, receive: Receive, send: Send) -> None:
        response: Response
        if not wants_page(scope):
            response = JSONResponse(task_error_body(status, message), status, headers)
        elif status == 401:
            response = RedirectResponse(login_url(scope), 303)
        else:
            title = f"{status} {reason_phrase(status)}"
            page = f"<!doctype html><title>{title}</title><h1>{title}</h1><p>{escape(message)}</p>"
            response = HTMLResponse(page, status, headers)
        await response(scope, receive, send)

    return respond
