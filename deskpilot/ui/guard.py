"""Who may use the UI: the Guard every service runs (``deskpilot.security``), with the UI's session cookie.

When a token is configured, every page, fragment, static file and proxied path needs the session the login
page sets (or the bearer token); the login page and what it loads stay open, as does ``/health``. The Host
and Origin checks apply to every path, the login page included. A refusal is answered as the caller can use
it: in the agent's error shape for scripts (``/api``, ``/fragments``, anything but a page), as a redirect to
the login page for a page opened without a session, as a short HTML page for other refused pages.
"""

from __future__ import annotations

from dataclasses import replace
from html import escape
from urllib.parse import quote

from starlette.datastructures import Headers
from starlette.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from starlette.types import ASGIApp, Receive, Scope, Send

from deskpilot.config import SecuritySettings
from deskpilot.errors import agent_error_body, reason_phrase
from deskpilot.security import Credentials, Guard, Policy, policy_for

# Open without a session (the Host and Origin checks still apply): the login page and what it loads.
PUBLIC_PATHS = frozenset({"/login", "/logout", "/static/app.css", "/static/favicon.svg"})
FORM = "application/x-www-form-urlencoded"
SCRIPT_PREFIXES = ("/api/", "/fragments/")


def ui_policy(security: SecuritySettings) -> Policy:
    """The UI's policy: sessions accepted; task creation may upload files, the login page posts a form."""
    return policy_for(
        "ui",
        security,
        sessions=True,
        other_types={"/api/tasks": ("multipart/form-data",), "/login": (FORM,), "/logout": (FORM,)},
    )


def ui_access(security: SecuritySettings) -> tuple[Policy, str | None]:
    """The UI's policy and its token: it signs sessions with the token and sends it upstream."""
    policy = ui_policy(security)
    token = security.token_value()
    if policy.credentials.required and not token:
        raise ValueError("the UI needs DESKPILOT_TOKEN itself, not only DESKPILOT_TOKEN_SHA256")
    return policy, token


class UIGuard:
    """The Guard, with the public paths checked without the token requirement."""

    def __init__(self, app: ASGIApp, policy: Policy) -> None:
        self.private = Guard(app, policy, refusal)
        self.public = Guard(app, replace(policy, credentials=Credentials()), refusal)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        guard = self.public if scope.get("path") in PUBLIC_PATHS else self.private
        await guard(scope, receive, send)


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
            response = JSONResponse(agent_error_body(status, message), status, headers)
        elif status == 401:
            response = RedirectResponse(login_url(scope), 303)
        else:
            title = f"{status} {reason_phrase(status)}"
            page = f"<!doctype html><title>{title}</title><h1>{title}</h1><p>{escape(message)}</p>"
            response = HTMLResponse(page, status, headers)
        await response(scope, receive, send)

    return respond
