"""The desktop service's HTTP client: ``Desktop`` (blocking) and ``AsyncDesktop`` (asyncio).

One typed method per action (``client_actions.py``, generated from the action models), ``action()`` for a
raw request, and ``reset()``/``health()``. Each typed call is validated by its action's model before it is
sent, so a mistake fails at once with the message the service would give (status 400); fields left at the
model's default are not sent. An error answer, or none, raises ``DesktopClientError`` with the status (0
when the service is unreachable) and the service's message. ``token`` is the appliance's
``DESKPILOT_TOKEN``, sent as ``Authorization: Bearer`` (never in a URL). The task service's worker and the
agent loop use ``AsyncDesktop`` too: there is one desktop client; ``acting_for(task_id)`` labels its requests
as the agent's, for that task, in the desktop's journal. When a service has switched traces on
(``deskpilot.tracing``), each ``AsyncDesktop`` POST is a ``desktop.action`` span whose context goes with the
request (W3C ``traceparent``), so the desktop's span of it is its child.

Actions go over the action channel (``channel.py``: one WebSocket kept open, a fraction of a request's
cost) unless ``channel=False``, the service refuses the upgrade (then HTTP from there on), the action is too
large for a message (a big write_file), traces are on (their context travels with a request), or the
client is labelled with ``acting_for`` (the label is the socket's; the agent's steps are not sub-millisecond
anyway). The answers are the same either way.
"""

from __future__ import annotations

import copy
from types import TracebackType
from typing import Any, Self, TypeVar

import httpx
import orjson
from pydantic_core import PydanticUndefined

from deskpilot.computer import channel as ch
from deskpilot.computer.actions import ACTION_MODELS, parse_action
from deskpilot.computer.chords import AsyncChords, Chords
from deskpilot.computer.client_actions import Result
from deskpilot.errors import ClientError, InvalidAction, error_detail
from deskpilot.tracing import desktop_action
from deskpilot.tracing import on as traces_on

T = TypeVar("T")
DEFAULT_TIMEOUT = 60.0


class DesktopClientError(ClientError):
    """The desktop refused or failed an action, or did not answer (``status`` 0)."""


def request_body(action: str, fields: dict[str, Any]) -> dict[str, Any]:
    """The JSON of a typed call: validated by the action's model; None and the model's defaults left out."""
    model = ACTION_MODELS[action]
    body = {"action": action}
    for name, value in fields.items():
        default = model.model_fields[name].default
        if value is not None and (default is PydanticUndefined or value != default):
            body[name] = value
    try:
        parse_action(body)
    except InvalidAction as exc:
        raise DesktopClientError(f"{action} failed (400): {exc.message}", 400, exc.message) from None
    return body


def answer(response: httpx.Response, what: str) -> dict[str, Any]:
    """The body of a successful answer; DesktopClientError with the status and message of any other."""
    try:
        body = orjson.loads(response.content)
    except orjson.JSONDecodeError:
        body = None
    return checked(response.status_code, body, what, response.text[:200])


def checked(status: int, body: Any, what: str, text: str = "") -> dict[str, Any]:
    if status < 400 and isinstance(body, dict) and body.get("success", True):
        return body
    detail = error_detail(body) or text
    raise DesktopClientError(f"{what} failed ({status}): {detail}", status, detail)


def broken(base_url: str, exc: ch.Broken) -> DesktopClientError:
    return DesktopClientError(f"desktop service at {base_url}: {exc}")


def unreachable(base_url: str, exc: httpx.HTTPError) -> DesktopClientError:
    return DesktopClientError(f"desktop service at {base_url} unreachable: {exc!r}")


def bearer(token: str | None) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"} if token else {}


def json_headers(token: str | None) -> dict[str, str]:
    return {**bearer(token), "Content-Type": "application/json"}


def agent_headers(task_id: str) -> dict[str, str]:
    """What labels a request as the agent's, acting for ``task_id`` (the desktop's journal_routes.py)."""
    return {"X-Deskpilot-Actor": "agent", "X-Deskpilot-Task": task_id}


class AsyncDesktop(AsyncChords):
    """The desktop service at ``url`` (``http://127.0.0.1:9990``), from asyncio code."""

    def __init__(
        self,
        url: str,
        token: str | None = None,
        *,
        timeout: float = DEFAULT_TIMEOUT,
        client: httpx.AsyncClient | None = None,
        channel: bool = True,
    ) -> None:
        self.base_url = url.rstrip("/")
        self._timeout = timeout
        self._client = client or httpx.AsyncClient(base_url=self.base_url, timeout=timeout)
        self._headers, self._json = bearer(token), json_headers(token)
        self._channel = ch.AsyncChannel(self.base_url, self._headers, timeout) if channel else None

    async def aclose(self) -> None:
        if self._channel is not None:
            await self._channel.aclose()
        await self._client.aclose()

    def acting_for(self, task_id: str) -> AsyncDesktop:
        """This desktop, each request labelled as the agent's for ``task_id``, over HTTP; it shares this
        one's connections, so close only this one."""
        labelled = copy.copy(self)
        labelled._headers = {**self._headers, **agent_headers(task_id)}
        labelled._json = {**self._json, **agent_headers(task_id)}
        labelled._channel = None
        return labelled

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()

    async def _post(self, path: str, body: dict[str, Any], what: str) -> dict[str, Any]:
        if traces_on():
            with desktop_action(what) as call:
                r = await self._send(path, body, call.headers(self._json))
                call.answered(r.status_code)
                result = answer(r, what)
                call.settled(result)
                return result
        return answer(await self._send(path, body, self._json), what)

    async def _send(self, path: str, body: dict[str, Any], headers: dict[str, str]) -> httpx.Response:
        try:
            return await self._client.post(path, content=orjson.dumps(body), headers=headers)
        except httpx.HTTPError as exc:
            raise unreachable(self.base_url, exc) from exc

    async def _act(self, action: str, fields: dict[str, Any], result: Result[T]) -> T:
        return result(await self._perform(request_body(action, fields), action))

    async def action(self, action: str, **fields: Any) -> dict[str, Any]:
        """Send ``{"action": action, **fields}`` as given (no validation here); the answer's body."""
        return ch.http_body(await self._perform({"action": action, **fields}, action))

    async def _perform(self, body: dict[str, Any], what: str) -> dict[str, Any]:
        """One action, over the channel when it can take it (a screenshot's image as bytes), else HTTP."""
        if self._channel is not None and not traces_on() and ch.fits(message := orjson.dumps(body)):
            try:
                return checked(*await self._channel.call(message), what)
            except ch.Unavailable as exc:
                if exc.lasting:
                    self._channel = None
            except ch.Broken as exc:
                raise broken(self.base_url, exc) from exc
        return await self._post("/computer-use", body, what)

    async def reset(self) -> dict[str, Any]:
        """``POST /reset``: applications closed, the home back to its skeleton, input released."""
        return await self._post("/reset", {}, "reset")

    def elsewhere(self, url: str) -> AsyncDesktop:
        """The desktop service at ``url`` with this one's token and labels (a new client: close it)."""
        other = copy.copy(self)
        other.base_url = url.rstrip("/")
        other._client = httpx.AsyncClient(base_url=other.base_url, timeout=self._client.timeout)
        if self._channel is not None:
            other._channel = ch.AsyncChannel(other.base_url, self._headers, self._timeout)
        return other

    async def journal(self, since: int = 0, limit: int = 1000, actor: str | None = None) -> dict[str, Any]:
        """``GET /journal``: a page of the actions that reached the desktop (docs/desktop-api.md)."""
        params: dict[str, str | int] = {"since": since, "limit": limit, **({"actor": actor} if actor else {})}
        try:
            r = await self._client.get("/journal", params=params, headers=self._headers)
        except httpx.HTTPError as exc:
            raise unreachable(self.base_url, exc) from exc
        return answer(r, "journal")

    async def journal_frame(self, frame_id: str) -> bytes | None:
        """``GET /journal/frames/{id}``: the PNG, or None once the journal evicted it."""
        try:
            r = await self._client.get(f"/journal/frames/{frame_id}", headers=self._headers)
        except httpx.HTTPError as exc:
            raise unreachable(self.base_url, exc) from exc
        if r.status_code == 404:
            return None
        if r.status_code != 200:
            answer(r, "journal frame")
        return r.content

    async def command(self, command: str, limit: float = 30.0) -> dict[str, Any]:
        """``POST /command``: ``command`` by /bin/sh as the desktop user, killed after ``limit`` s."""
        return await self._post("/command", {"command": command, "timeout": limit}, "command")

    async def health(self) -> dict[str, Any]:
        try:
            return answer(await self._client.get("/health", headers=self._headers), "health")
        except httpx.HTTPError as exc:
            raise unreachable(self.base_url, exc) from exc


class Desktop(Chords):
    """The desktop service at ``url`` (``http://127.0.0.1:9990``), blocking."""

    def __init__(
        self,
        url: str,
        token: str | None = None,
        *,
        timeout: float = DEFAULT_TIMEOUT,
        client: httpx.Client | None = None,
        channel: bool = True,
    ) -> None:
        self.base_url = url.rstrip("/")
        self._timeout = timeout
        self._client = client or httpx.Client(base_url=self.base_url, timeout=timeout)
        self._headers, self._json = bearer(token), json_headers(token)
        self._channel = ch.Channel(self.base_url, self._headers, timeout) if channel else None

    def close(self) -> None:
        if self._channel is not None:
            self._channel.close()
        self._client.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def _post(self, path: str, body: dict[str, Any], what: str) -> dict[str, Any]:
        try:
            r = self._client.post(path, content=orjson.dumps(body), headers=self._json)
        except httpx.HTTPError as exc:
            raise unreachable(self.base_url, exc) from exc
        return answer(r, what)

    def _act(self, action: str, fields: dict[str, Any], result: Result[T]) -> T:
        return result(self._perform(request_body(action, fields), action))

    def action(self, action: str, **fields: Any) -> dict[str, Any]:
        """Send ``{"action": action, **fields}`` as given (no validation here); the answer's body."""
        return ch.http_body(self._perform({"action": action, **fields}, action))

    def _perform(self, body: dict[str, Any], what: str) -> dict[str, Any]:
        """One action, over the channel when it can take it (a screenshot's image as bytes), else HTTP."""
        if self._channel is not None and ch.fits(message := orjson.dumps(body)):
            try:
                return checked(*self._channel.call(message), what)
            except ch.Unavailable as exc:
                if exc.lasting:
                    self._channel = None
            except ch.Broken as exc:
                raise broken(self.base_url, exc) from exc
        return self._post("/computer-use", body, what)

    def reset(self) -> dict[str, Any]:
        """``POST /reset``: applications closed, the home back to its skeleton, input released."""
        return self._post("/reset", {}, "reset")

    def command(self, command: str, limit: float = 30.0) -> dict[str, Any]:
        """``POST /command``: ``command`` by /bin/sh as the desktop user, killed after ``limit`` s."""
        return self._post("/command", {"command": command, "timeout": limit}, "command")

    def health(self) -> dict[str, Any]:
        try:
            return answer(self._client.get("/health", headers=self._headers), "health")
        except httpx.HTTPError as exc:
            raise unreachable(self.base_url, exc) from exc
