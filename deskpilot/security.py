"""The checks every surface of every service applies before a request reaches a route.

One ASGI middleware, ``Guard``, in front of each service (HTTP and WebSocket alike):

1. **Host** (DNS rebinding): the ``Host`` header must name loopback or a configured host
   (``DESKPILOT_ALLOWED_HOSTS``; ``*`` turns the check off) — 400 otherwise.
2. **Origin** (cross-site requests): a request that can change something (any method but GET, HEAD and
   OPTIONS, and every WebSocket handshake) and carries an ``Origin`` (every browser sends one cross-site)
   must come from the service's own origin or one configured in ``DESKPILOT_ALLOWED_ORIGINS`` — 403.
3. **Content type**: a body sent to a JSON endpoint must be declared ``application/json`` (a browser sends
   ``text/plain`` cross-site without asking first) — 415.
4. **Token**: when a token is configured, every request but the probes' (``/health``, ``/health/live``)
   carries ``Authorization: Bearer <token>`` (or, where a service allows it, its session cookie) — 401
   with ``WWW-Authenticate: Bearer``. A probe always passes; ``authorized(scope)`` then says whether it
   would have passed anyway (allowed Host, and the token when one is required), and so may see details.

``deny_framing`` makes every response of a service refuse to be framed (``X-Frame-Options: DENY`` and CSP
``frame-ancestors 'none'``), its error pages and API docs included: no page of another site can clickjack it.

Services compare a SHA-256 digest of what they are shown with the digest of the token, in constant time:
the desktop service is given only digests (``DESKPILOT_TOKEN_SHA256``: the token's and, in the appliance, the
desktop credential's, which the task service and the UI present instead of the token), never the token.
Refusals are rendered by the service (its own error shape); nothing here logs a credential.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
from collections.abc import Awaitable, Callable, Collection
from dataclasses import dataclass, field
from http.cookies import SimpleCookie
from typing import Protocol
from urllib.parse import urlsplit

from starlette.applications import Starlette
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from deskpilot.config import SecuritySettings

log = logging.getLogger(__name__)

LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "::1"})
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
SESSION_COOKIE = "deskpilot_session"
# Set on the scope of every request the Guard lets through: whether it would pass a guarded route.
AUTHORIZED = "deskpilot.authorized"
JSON_TYPES = ("application/json",)

# (status, message, extra headers) -> an ASGI response in the service's error shape
Refusal = Callable[[int, str, dict[str, str]], Callable[[Scope, Receive, Send], Awaitable[None]]]


def digest(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


class SessionCheck(Protocol):
    """What checks a session cookie (the UI's ``deskpilot.ui.sessions.Sessions``): signed, unexpired, not
    revoked."""

    def accepts(self, value: str) -> bool: ...


def host_name(host_header: str) -> str:
    """``example.com:9990`` -> ``example.com``; ``[::1]:9990`` -> ``::1``; lower case."""
    host = host_header.strip().lower()
    if host.startswith("["):
        return host[1:].split("]", 1)[0]
    return host.rsplit(":", 1)[0] if host.count(":") == 1 else host


@dataclass(frozen=True)
class Credentials:
    """What a request must show: a bearer token (checked by digest) and, where the service has sessions (the
    UI), a session cookie that ``sessions`` accepts."""

    token_digests: frozenset[str] = frozenset()  # any one of them opens the service
    sessions: SessionCheck | None = None

    @classmethod
    def from_token(cls, token: str | None, *, sessions: SessionCheck | None = None) -> Credentials:
        if not token:
            return cls()
        return cls(frozenset({digest(token)}), sessions)

    @property
    def required(self) -> bool:
        return bool(self.token_digests)

    def accepts_bearer(self, presented: str) -> bool:
        shown = digest(presented)
        # every digest is compared, so the time taken tells nothing of which one matched
        return sum(hmac.compare_digest(shown, d) for d in self.token_digests) > 0

    def accepts_session(self, presented: str) -> bool:
        return self.sessions is not None and self.sessions.accepts(presented)


@dataclass(frozen=True)
class Policy:
    credentials: Credentials = field(default_factory=Credentials)
    allowed_hosts: frozenset[str] = frozenset()  # besides loopback; "*" = any
    allowed_origins: frozenset[str] = frozenset()  # besides the service's own origin
    # probes (Kubernetes sends the pod IP as Host): no token, any Host; they reveal nothing secret
    open_paths: frozenset[str] = frozenset({"/health", "/health/live"})
    # a body sent with one of these methods must be JSON, except on the paths listed with other types
    json_methods: frozenset[str] = frozenset({"POST", "PUT", "PATCH", "DELETE"})
    other_types: dict[str, tuple[str, ...]] = field(default_factory=dict)  # path -> accepted media types
    check_content_type: bool = True

    def host_allowed(self, host_header: str) -> bool:
        if "*" in self.allowed_hosts:
            return True
        name = host_name(host_header)
        return name in LOOPBACK_HOSTS or name in self.allowed_hosts

    def origin_allowed(self, origin: str, host_header: str) -> bool:
        """Same origin (the Origin names the host the request was sent to) or a configured one."""
        if origin in self.allowed_origins:
            return True
        parts = urlsplit(origin)
        return bool(parts.netloc) and parts.netloc.lower() == host_header.strip().lower()


def policy_for(
    service: str,
    settings: SecuritySettings | None = None,
    *,
    sessions: SessionCheck | None = None,
    other_types: dict[str, tuple[str, ...]] | None = None,
    check_content_type: bool = True,
) -> Policy:
    """The policy of one service from the environment (``DESKPILOT_*``)."""
    s = settings or SecuritySettings()
    if s.auth == "off":
        log.warning("DESKPILOT_AUTH=off: %s requires no token", service, extra={"service": service})
        creds = Credentials()
    elif s.token_value():
        creds = Credentials.from_token(s.token_value(), sessions=sessions)
    elif s.token_sha256:
        digests = frozenset(d.strip().lower() for d in s.token_sha256.split(",") if d.strip())
        creds = Credentials(token_digests=digests)
    else:
        creds = Credentials()
    return Policy(
        credentials=creds,
        allowed_hosts=frozenset(host_name(h) if h != "*" else h for h in s.allowed_hosts),
        allowed_origins=frozenset(o.rstrip("/") for o in s.allowed_origins),
        other_types=other_types or {},
        check_content_type=check_content_type,
    )


def _headers(scope: Scope) -> dict[str, str]:
    # The last of a repeated header wins; the ones checked here are never legitimately repeated.
    return {k.decode("latin-1"): v.decode("latin-1") for k, v in scope["headers"]}


def bearer(headers: dict[str, str]) -> str | None:
    scheme, _, value = headers.get("authorization", "").partition(" ")
    return value.strip() if scheme.lower() == "bearer" and value.strip() else None


def session_cookie(headers: dict[str, str]) -> str | None:
    raw = headers.get("cookie")
    if not raw:
        return None
    cookie = SimpleCookie()
    try:
        cookie.load(raw)
    except Exception:  # a malformed Cookie header is no credential
        return None
    morsel = cookie.get(SESSION_COOKIE)
    return morsel.value if morsel else None


def media_type(headers: dict[str, str]) -> str:
    return headers.get("content-type", "").split(";", 1)[0].strip().lower()


def has_body(headers: dict[str, str]) -> bool:
    length = headers.get("content-length")
    return "transfer-encoding" in headers or (length is not None and length.strip() not in ("", "0"))


class Guard:
    """The middleware; ``refuse`` renders a refusal in the service's own error shape."""

    def __init__(self, app: ASGIApp, policy: Policy, refuse: Refusal) -> None:
        self.app = app
        self.policy = policy
        self.refuse = refuse

    def verdict(self, scope: Scope) -> tuple[int, str, dict[str, str]] | None:
        """None when the request may pass, else (status, message, headers) of the refusal."""
        p = self.policy
        headers = _headers(scope)
        host = headers.get("host", "")
        path: str = scope["path"]
        if path in p.open_paths:
            return None
        if not p.host_allowed(host):
            return 400, f"Host {host_name(host)!r} is not allowed; add it to DESKPILOT_ALLOWED_HOSTS", {}
        websocket = scope["type"] == "websocket"
        method = "GET" if websocket else scope["method"]
        origin = headers.get("origin")
        changes = websocket or method not in SAFE_METHODS
        if origin is not None and changes and not p.origin_allowed(origin, host):
            return 403, f"requests from the origin {origin!r} are not allowed", {}
        if p.credentials.required and not self._authenticated(headers):
            challenge = {"WWW-Authenticate": 'Bearer realm="deskpilot"'}
            return 401, "authentication required: send Authorization: Bearer <DESKPILOT_TOKEN>", challenge
        if p.check_content_type and not websocket and method in p.json_methods and has_body(headers):
            accepted = (*JSON_TYPES, *p.other_types.get(path, ()))
            kind = media_type(headers)
            if kind not in accepted and not kind.endswith("+json"):
                return 415, f"Content-Type must be {' or '.join(accepted)}, not {kind or 'missing'!r}", {}
        return None

    def authorizes(self, scope: Scope) -> bool:
        """Whether a request would pass to a guarded route: an allowed Host and the token when one is
        required (the Origin and content-type checks concern only requests that change something)."""
        headers = _headers(scope)
        if not self.policy.host_allowed(headers.get("host", "")):
            return False
        return not self.policy.credentials.required or self._authenticated(headers)

    def _authenticated(self, headers: dict[str, str]) -> bool:
        creds = self.policy.credentials
        token = bearer(headers)
        if token is not None and creds.accepts_bearer(token):
            return True
        cookie = session_cookie(headers)
        return cookie is not None and creds.accepts_session(cookie)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        refused = self.verdict(scope)
        if refused is None:
            opened = scope["path"] in self.policy.open_paths  # a probe: say whether it holds the token
            scope[AUTHORIZED] = self.authorizes(scope) if opened else True
            await self.app(scope, receive, send)
            return
        status, message, headers = refused
        if scope["type"] == "websocket":
            await _close_websocket(receive, send, status, message)
            return
        await self.refuse(status, message, headers)(scope, receive, send)


async def _close_websocket(receive: Receive, send: Send, status: int, message: str) -> None:
    """Refuse a handshake with an HTTP status (the WebSocket Denial Response extension), or close it with
    1008 where the server does not support that."""
    first = await receive()
    if first["type"] != "websocket.connect":
        return
    body = message.encode()
    start: Message = {
        "type": "websocket.http.response.start",
        "status": status,
        "headers": [(b"content-type", b"text/plain; charset=utf-8")],
    }
    try:
        await send(start)
        await send({"type": "websocket.http.response.body", "body": body})
    except RuntimeError:  # no denial-response support: accept-less close
        await send({"type": "websocket.close", "code": 1008, "reason": message[:120]})


def authorized(scope: Scope) -> bool:
    """Whether the Guard found this request authorized (see ``Guard.authorizes``); False without a Guard."""
    return scope.get(AUTHORIZED) is True


FRAME_ANCESTORS = b"frame-ancestors 'none'"


def frame_headers() -> list[tuple[bytes, bytes]]:
    """What refuses framing: no page of any site, this one included, may frame a response."""
    return [(b"x-frame-options", b"DENY"), (b"content-security-policy", FRAME_ANCESTORS)]


def _directive(part: bytes) -> bytes:
    return part.strip().split(None, 1)[0].lower() if part.strip() else b""


def refuse_framing(headers: Collection[tuple[bytes, bytes]]) -> list[tuple[bytes, bytes]]:
    """``headers`` with one ``X-Frame-Options: DENY`` and ``frame-ancestors 'none'`` in the (first)
    Content-Security-Policy: a policy the response sets itself keeps its other directives."""
    kept: list[tuple[bytes, bytes]] = []
    merged = False
    for name, value in headers:
        lower = name.lower()
        if lower == b"x-frame-options":
            continue
        if lower == b"content-security-policy":
            parts = [p.strip() for p in value.split(b";") if _directive(p) not in (b"", b"frame-ancestors")]
            if not merged:
                parts.append(FRAME_ANCESTORS)
                merged = True
            if not parts:
                continue
            value = b"; ".join(parts)
        kept.append((name, value))
    if not merged:
        kept.append((b"content-security-policy", FRAME_ANCESTORS))
    return [*kept, (b"x-frame-options", b"DENY")]


class FrameDenial:
    """Middleware: every HTTP response of ``app`` refuses framing (``refuse_framing``)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def sending(message: Message) -> None:
            if message["type"] == "http.response.start":
                message = {**message, "headers": refuse_framing(message.get("headers", []))}
            await send(message)

        await self.app(scope, receive, sending)


def deny_framing(app: Starlette) -> None:
    """Every response of ``app`` refuses framing: outside all of its middleware, so the error pages of the
    outermost (an unhandled exception's 500) carry the headers too, as do its API docs and refusals."""
    build = app.build_middleware_stack
    app.build_middleware_stack = lambda: FrameDenial(build())  # type: ignore[method-assign]
