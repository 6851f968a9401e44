"""The web UI's sessions: a signed cookie with a lifetime, ended for good by logging out.

The cookie is ``<id>.<issued>.<mac>``: a random id, when it was issued (Unix milliseconds) and an
HMAC-SHA256 of both under a key derived from the token ("deskpilot session v2"), so the cookie holds nothing
secret, cannot be forged or prolonged, and a new token ends every session. Any process of the UI that has the
token checks it without asking anyone (the chart runs several), for ``UI_SESSION_TTL`` hours after
``issued``.

Logging out revokes the session: its id is kept until the session would have expired, and every surface
refuses it from then on: pages, fragments, the proxied API and live view (``Credentials.accepts_session``,
through the Guard) and the WebSockets it opened (``bound``, which closes them with 1008, as it does when the
session expires). Revocations live in the process's memory, so a process accepts only sessions issued after
it started: restarting the UI ends every session (users log in again), and never brings a revoked one back.
A process that kept more than ``MAX_REVOKED`` revocations at once ends every session it accepts instead of
forgetting one.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import hmac
import logging
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

log = logging.getLogger(__name__)

KEY_LABEL = b"deskpilot session v2"
MAX_REVOKED = 10_000
# how far in the future a cookie's issue time may be (the clocks of the UI's replicas differ a little)
SKEW_MS = 60_000
# the close code and reason of a WebSocket whose session ended (1008: policy violation)
ENDED_CODE = 1008
ENDED_REASON = "the session ended: log in again"


@dataclass(frozen=True)
class Session:
    id: str
    issued_ms: int
    expires: float  # Unix seconds


class Sessions:
    """Issues, checks and revokes the UI's sessions (see the module's doc)."""

    def __init__(
        self,
        token: str,
        ttl_seconds: float,
        *,
        max_revoked: int = MAX_REVOKED,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._key = hmac.new(token.encode(), KEY_LABEL, hashlib.sha256).digest()
        self.ttl = ttl_seconds
        self.max_revoked = max_revoked
        self._clock = clock
        # sessions issued before this are refused: the revocations of earlier processes are not known here
        self._epoch_ms = int(clock() * 1000)
        self._revoked: dict[str, float] = {}  # id -> when the session would have expired
        self._ended: dict[str, set[asyncio.Event]] = {}  # id -> one event per WebSocket it holds open

    @property
    def max_age(self) -> int:
        """The cookie's Max-Age: the browser drops it when the server stops accepting it."""
        return max(1, int(self.ttl))

    def _mac(self, body: str) -> str:
        return hmac.new(self._key, body.encode(), hashlib.sha256).hexdigest()

    def issue(self) -> str:
        """A new session's cookie value."""
        issued = max(int(self._clock() * 1000), self._epoch_ms)
        body = f"{secrets.token_urlsafe(18)}.{issued}"
        return f"{body}.{self._mac(body)}"

    def session(self, value: str) -> Session | None:
        """The session a cookie value holds, if it is one of ours, unexpired and not revoked."""
        parts = value.split(".")
        if len(parts) != 3:
            return None
        sid, issued_text, mac = parts
        if not sid or not (issued_text.isascii() and issued_text.isdigit()) or len(issued_text) > 15:
            return None
        if not hmac.compare_digest(mac.encode(), self._mac(f"{sid}.{issued_text}").encode()):
            return None
        now = self._clock()
        issued = int(issued_text)
        if issued < self._epoch_ms or issued > now * 1000 + SKEW_MS:
            return None
        expires = issued / 1000 + self.ttl
        if now >= expires or sid in self._revoked:
            return None
        return Session(sid, issued, expires)

    def accepts(self, value: str) -> bool:
        return self.session(value) is not None

    def revoke(self, session: Session) -> None:
        """End ``session`` everywhere in this process, its open WebSockets included."""
        now = self._clock()
        self._revoked = {sid: until for sid, until in self._revoked.items() if until > now}
        if len(self._revoked) >= self.max_revoked:
            log.warning(
                "too many sessions revoked at once: every session ends", extra={"revoked": len(self._revoked)}
            )
            self._epoch_ms = int(now * 1000) + 1
            self._revoked.clear()
            for events in self._ended.values():
                for event in events:
                    event.set()
            return
        self._revoked[session.id] = session.expires
        for event in self._ended.get(session.id, ()):
            event.set()

    def ended(self, session: Session) -> _Ending:
        """An event set when ``session`` is revoked or expires, for one WebSocket it holds open."""
        return _Ending(self, session)


class _Ending:
    """``with sessions.ended(session) as event``: ``event`` is set on revocation or expiry."""

    def __init__(self, sessions: Sessions, session: Session) -> None:
        self.sessions = sessions
        self.session = session
        self.event = asyncio.Event()
        self._timer: asyncio.TimerHandle | None = None

    def __enter__(self) -> asyncio.Event:
        self.sessions._ended.setdefault(self.session.id, set()).add(self.event)
        delay = max(0.0, self.session.expires - self.sessions._clock())
        self._timer = asyncio.get_running_loop().call_later(delay, self.event.set)
        return self.event

    def __exit__(self, *_: object) -> None:
        if self._timer is not None:
            self._timer.cancel()
        events = self.sessions._ended.get(self.session.id)
        if events is not None:
            events.discard(self.event)
            if not events:
                del self.sessions._ended[self.session.id]


async def bound(app: ASGIApp, scope: Scope, receive: Receive, send: Send, ending: _Ending) -> None:
    """Run a WebSocket of ``app`` for as long as its session lasts: when it is revoked or expires, the
    browser's connection is closed (1008) and the app is told the client went away, so it closes its side
    (the proxy its upstream connection)."""
    with ending as event:
        relay = _Relay(receive, send, event)
        try:
            await app(scope, relay.receive, relay.send)
        finally:
            await relay.stop()


class _Relay:
    """The ASGI receive and send of one WebSocket, cut off when ``event`` is set."""

    def __init__(self, receive: Receive, send: Send, event: asyncio.Event) -> None:
        self._receive = receive
        self._send = send
        self._event = event
        self._closed = False
        self._accepted = False
        self._pending: asyncio.Future[Message] | None = None

    async def receive(self) -> Message:
        if self._closed:
            return {"type": "websocket.disconnect", "code": ENDED_CODE}
        if self._pending is None:
            self._pending = asyncio.ensure_future(self._receive())
        pending = self._pending
        ended: asyncio.Future[Any] = asyncio.ensure_future(self._event.wait())
        try:
            await asyncio.wait([pending, ended], return_when=asyncio.FIRST_COMPLETED)
        finally:
            ended.cancel()
        if pending.done():
            self._pending = None
            return pending.result()
        self._closed = True
        close: Message = {"type": "websocket.close", "code": ENDED_CODE}
        if self._accepted:
            close["reason"] = ENDED_REASON
        await self._send(close)  # before the accept, this refuses the handshake
        return {"type": "websocket.disconnect", "code": ENDED_CODE}

    async def send(self, message: Message) -> None:
        if self._closed:  # the browser's connection is closed: what the app still sends goes nowhere
            return
        if message["type"] == "websocket.accept":
            self._accepted = True
        await self._send(message)

    async def stop(self) -> None:
        if self._pending is not None:
            self._pending.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._pending
