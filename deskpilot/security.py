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
   with ``WWW-Authenticate: Bearer``.

Services compare a SHA-256 digest of what they are shown with the digest of the token, in constant time:
the desktop service runs as the desktop user, so it is given only the digest (``DESKPILOT_TOKEN_SHA256``),
never the token. Refusals are rendered by the service (its own error shape); nothing here logs a credential.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
from collections.abc import Awaitable, Callable, Collection
from dataclasses import dataclass, field
from http.cookies import SimpleCookie
from urllib.parse import urlsplit

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from deskpilot.config import SecuritySettings

log = logging.getLogger(__name__)

LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "::1"})
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
SESSION_COOKIE = "deskpilot_session"
JSON_TYPES = ("application/json",)

# (status, message, extra headers) -> an ASGI response in the service's error shape
Refusal = Callable[[int, str, dict[str, str]], Callable[[Scope, Receive, Send], Awaitable[None]]]


def digest(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def session_value(token: str) -> str:
    """The UI's session cookie: derived from the token (a new token ends every session), not the token."""
    return hmac.new(token.encode(), b"deskpilot session v1", hashlib.sha256).hexdigest()


def host_name(host_header: str) -> str:
    """``example.com:9990`` -> ``example.com``; ``[::1]:9990`` -> ``::1``; lower case."""
    host = host_header.strip().lower()
    if host.startswith("["):
        return host[1:].split("]", 1)[0]
    return host.rsplit(":", 1)[0] if host.count(":") == 1 else host


@dataclass(frozen=True)
class Credentials:
    """What a request must show: a bearer token (checked by digest) and, optionally, a session cookie."""

    token_digest: str | None = None
    session_digest: str | None = None

    @classmethod
    def from_token(cls, token: str | None, *, sessions: bool = False) -> Credentials:
        if not token:
            return cls()
        return cls(digest(token), digest(session_value(token)) if sessions else None)

    @property
    def required(self) -> bool:
        return self.token_digest is not None

    def accepts_bearer(self, presented: str) -> bool:
        return self.token_digest is not None and hmac.compare_digest(digest(presented), self.token_digest)

    def accepts_session(self, presented: str) -> bool:
        return self.session_digest is not None and hmac.compare_digest(digest(presented), self.session_digest)


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
    sessions: bool = False,
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
        creds = Credentials(token_digest=s.token_sha256.strip().lower())
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


def frame_headers() -> list[tuple[bytes, bytes]]:
    """Pages that must not be framed by another site (the UI, noVNC's viewer)."""
    return [
        (b"x-frame-options", b"DENY"),
        (b"content-security-policy", b"frame-ancestors 'self'"),
    ]


def with_headers(app: ASGIApp, extra: Collection[tuple[bytes, bytes]]) -> ASGIApp:
    """Add response headers to every HTTP response of ``app``."""

    async def wrapped(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await app(scope, receive, send)
            return

        async def sending(message: Message) -> None:
            if message["type"] == "http.response.start":
                message = {**message, "headers": [*message.get("headers", []), *extra]}
            await send(message)

        await app(scope, receive, sending)

    return wrapped
