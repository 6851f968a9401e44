"""The task service's client: ``Agent`` (blocking) and ``AsyncAgent`` (asyncio).

Every method but ``wait`` is an operation of ``calls.py`` run by this module's two runners; ``wait``
follows the task on the event stream (``follow.py``). ``token`` is the appliance's ``DESKPILOT_TOKEN``,
sent as ``Authorization: Bearer`` on every request and on the WebSocket's handshake.
"""

from __future__ import annotations

import asyncio
import functools
import time
from collections.abc import Callable, Collection, Coroutine
from types import TracebackType
from typing import Any, Concatenate, ParamSpec, Self, TypeVar

import httpx
import websockets.asyncio.client
import websockets.sync.client
from websockets.exceptions import WebSocketException

from deskpilot.client import calls
from deskpilot.client.calls import STOPPED, Call, Operation, TaskClientError
from deskpilot.client.follow import OPEN_TIMEOUT, Follow
from deskpilot.taskapi.types import TaskOut, TaskStatus

P = ParamSpec("P")
T = TypeVar("T")
DEFAULT_TIMEOUT = 60.0
Until = Collection[TaskStatus | str]


def unreachable(call: Call[Any], base_url: str, exc: Exception) -> TaskClientError:
    reason = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
    return TaskClientError(f"{call.what}: the task service at {base_url} is not reachable ({reason})")


class _TaskClient:
    def __init__(self, url: str, token: str | None) -> None:
        self.base_url = url.rstrip("/")
        self._headers = {"Authorization": f"Bearer {token}"} if token else {}
        self._json = {**self._headers, "Content-Type": "application/json"}

    def _request(self, call: Call[Any]) -> dict[str, Any]:
        headers = self._headers if call.body is None else self._json
        return {"headers": headers, "params": call.params, "content": call.content()}


class _Blocking(_TaskClient):
    _http: httpx.Client

    def _run(self, operation: Operation[T]) -> T:
        try:
            call = next(operation)
            while True:
                try:
                    response = self._http.request(call.method, call.path, **self._request(call))
                except httpx.HTTPError as exc:
                    raise unreachable(call, self.base_url, exc) from exc
                call = operation.send(call.answer(response))
        except StopIteration as done:
            result: T = done.value
            return result


class _Awaiting(_TaskClient):
    _http: httpx.AsyncClient

    async def _run(self, operation: Operation[T]) -> T:
        try:
            call = next(operation)
            while True:
                try:
                    response = await self._http.request(call.method, call.path, **self._request(call))
                except httpx.HTTPError as exc:
                    raise unreachable(call, self.base_url, exc) from exc
                call = operation.send(call.answer(response))
        except StopIteration as done:
            result: T = done.value
            return result


def blocking(operation: Callable[P, Operation[T]]) -> Callable[Concatenate[_Blocking, P], T]:
    @functools.wraps(operation)
    def method(self: _Blocking, /, *args: P.args, **kwargs: P.kwargs) -> T:
        return self._run(operation(*args, **kwargs))

    return method


def awaiting(
    operation: Callable[P, Operation[T]],
) -> Callable[Concatenate[_Awaiting, P], Coroutine[Any, Any, T]]:
    @functools.wraps(operation)
    async def method(self: _Awaiting, /, *args: P.args, **kwargs: P.kwargs) -> T:
        return await self._run(operation(*args, **kwargs))

    return method


class Agent(_Blocking):
    """The task service at ``url`` (``http://127.0.0.1:9991``), blocking."""

    def __init__(
        self, url: str, token: str | None = None, *, timeout: float | httpx.Timeout = DEFAULT_TIMEOUT
    ) -> None:
        super().__init__(url, token)
        self._http = httpx.Client(base_url=self.base_url, timeout=timeout)

    create = blocking(calls.create)
    get = blocking(calls.get)
    tasks = blocking(calls.tasks)
    page = blocking(calls.page)
    messages = blocking(calls.messages)
    messages_from = blocking(calls.messages_from)
    reply = blocking(calls.reply)
    take_over = blocking(calls.take_over)
    hand_back = blocking(calls.hand_back)
    update = blocking(calls.update)
    cancel = blocking(calls.cancel)
    delete = blocking(calls.delete)
    clear = blocking(calls.clear)
    models = blocking(calls.models)
    trajectory = blocking(calls.trajectory)
    archive = blocking(calls.archive)
    desktops = blocking(calls.desktops)
    health = blocking(calls.health)

    def wait(self, task_id: str, *, timeout: float | None = None, until: Until = STOPPED) -> TaskOut:
        """Follow the task's events until its status is one of ``until`` (by default: the agent stopped,
        COMPLETED, FAILED, CANCELLED, NEEDS_HELP or NEEDS_REVIEW); TimeoutError after ``timeout`` s."""
        follow = Follow(self.base_url, task_id, until, timeout)
        while True:
            try:
                with websockets.sync.client.connect(
                    follow.url, additional_headers=self._headers, open_timeout=follow.remaining(OPEN_TIMEOUT)
                ) as ws:
                    task: TaskOut | None = self.get(task_id)
                    while task is None or not follow.reached(task):
                        task = follow.frame(ws.recv(timeout=follow.remaining()))
                    return task
            except (OSError, WebSocketException, TaskClientError) as exc:
                time.sleep(follow.dropped(exc))

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


class AsyncAgent(_Awaiting):
    """The task service at ``url`` (``http://127.0.0.1:9991``), from asyncio code."""

    def __init__(
        self, url: str, token: str | None = None, *, timeout: float | httpx.Timeout = DEFAULT_TIMEOUT
    ) -> None:
        super().__init__(url, token)
        self._http = httpx.AsyncClient(base_url=self.base_url, timeout=timeout)

    create = awaiting(calls.create)
    get = awaiting(calls.get)
    tasks = awaiting(calls.tasks)
    page = awaiting(calls.page)
    messages = awaiting(calls.messages)
    messages_from = awaiting(calls.messages_from)
    reply = awaiting(calls.reply)
    take_over = awaiting(calls.take_over)
    hand_back = awaiting(calls.hand_back)
    update = awaiting(calls.update)
    cancel = awaiting(calls.cancel)
    delete = awaiting(calls.delete)
    clear = awaiting(calls.clear)
    models = awaiting(calls.models)
    trajectory = awaiting(calls.trajectory)
    archive = awaiting(calls.archive)
    desktops = awaiting(calls.desktops)
    health = awaiting(calls.health)

    # Agent.wait's signature; an outer asyncio.timeout would raise a bare TimeoutError, without the status
    # the task is still in
    async def wait(
        self,
        task_id: str,
        *,
        timeout: float | None = None,  # noqa: ASYNC109
        until: Until = STOPPED,
    ) -> TaskOut:
        """``Agent.wait``, from asyncio code."""
        follow = Follow(self.base_url, task_id, until, timeout)
        while True:
            try:
                async with websockets.asyncio.client.connect(
                    follow.url, additional_headers=self._headers, open_timeout=follow.remaining(OPEN_TIMEOUT)
                ) as ws:
                    task: TaskOut | None = await self.get(task_id)
                    while task is None or not follow.reached(task):
                        async with asyncio.timeout(follow.remaining()):
                            task = follow.frame(await ws.recv())
                    return task
            except (OSError, WebSocketException, TaskClientError) as exc:
                await asyncio.sleep(follow.dropped(exc))

    async def aclose(self) -> None:
        await self._http.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()
