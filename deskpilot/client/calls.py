"""The task API's requests, each written once: an operation is a generator that yields the HTTP calls it
needs and returns its result. ``Agent`` runs them with a blocking HTTP client, ``AsyncAgent`` with an
asynchronous one (``agent.py``), so the two can never differ in what they send or how they read it.
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Generic, TypeVar
from urllib.parse import quote

import httpx
import orjson
import pybase64
from pydantic import TypeAdapter

from deskpilot.errors import ClientError, error_detail
from deskpilot.taskapi.types import (
    DesktopOut,
    MessageOut,
    ModelOut,
    TaskDetail,
    TaskOut,
    TaskPage,
    TaskPriority,
    TaskStatus,
)

T = TypeVar("T")

# The statuses in which the agent has stopped and waits for nobody but a human: what wait() waits for.
STOPPED = frozenset(
    {
        TaskStatus.NEEDS_HELP,
        TaskStatus.NEEDS_REVIEW,
        TaskStatus.COMPLETED,
        TaskStatus.FAILED,
        TaskStatus.CANCELLED,
    }
)
PAGE = 1000  # the API's largest page

Files = Mapping[str, bytes | str] | Iterable[str | Path]


class TaskClientError(ClientError):
    """The task service refused or failed a request, or did not answer (``status`` 0)."""


@dataclass(frozen=True)
class Call(Generic[T]):
    """One HTTP request of the task API and how to read its answer."""

    method: str
    path: str
    read: Callable[[Any], T]
    body: Any = None
    params: dict[str, Any] = field(default_factory=dict)
    raw: bool = False  # ``read`` takes the answer itself (an archive, a header), not its JSON

    @property
    def what(self) -> str:
        return f"{self.method} {self.path}"

    def content(self) -> bytes | None:
        return None if self.body is None else orjson.dumps(self.body)

    def answer(self, response: httpx.Response) -> T:
        """The answer read, or TaskClientError with its status and the service's message (502 for an
        answer that is not what the task API answers)."""
        try:
            parse = response.content and (not self.raw or response.status_code >= 400)  # errors are JSON
            body = orjson.loads(response.content) if parse else None
        except orjson.JSONDecodeError:
            body = None
        if response.status_code >= 400:
            status, detail = response.status_code, error_detail(body) or response.text[:200]
            raise TaskClientError(f"{self.what} failed ({status}): {detail}", status, detail)
        try:
            return self.read(response if self.raw else body)
        except ValueError as exc:  # pydantic's ValidationError is one
            detail = f"the task service's answer could not be read: {str(exc)[:300]}"
            raise TaskClientError(f"{self.what}: {detail}", 502, detail) from exc


Operation = Generator[Call[Any], Any, T]


def one(call: Call[T]) -> Operation[T]:
    """The operation of a single call."""
    result: T = yield call
    return result


_TASKS = TypeAdapter(list[TaskOut])
_MESSAGES = TypeAdapter(list[MessageOut])
_MODELS = TypeAdapter(list[ModelOut])
_DESKTOPS = TypeAdapter(list[DesktopOut])


def _at(task_id: str, rest: str = "") -> str:
    """The task's path: its id quoted, so that no id can name another resource."""
    return f"/tasks/{quote(task_id, safe='')}{rest}"


def _task(body: Any) -> TaskOut:
    return TaskOut.model_validate(body)


def _nothing(body: Any) -> None:
    return None


def _file_entries(files: Files) -> list[dict[str, str]]:
    """Files as the JSON create request takes them: {name: content} (bytes, or text as UTF-8) or paths."""
    if isinstance(files, Mapping):
        items = [(name, data.encode() if isinstance(data, str) else data) for name, data in files.items()]
    else:
        items = [(Path(p).name, Path(p).read_bytes()) for p in files]
    return [{"name": name, "data": pybase64.b64encode_as_string(data)} for name, data in items]


def create(
    description: str,
    *,
    files: Files = (),
    priority: TaskPriority | str | None = None,
    model: str | None = None,
    scheduled_for: datetime | str | None = None,
) -> Operation[TaskOut]:
    """A new task (PENDING): ``files`` land on the desktop before its first step, ``model`` is a name of
    ``models()``, ``scheduled_for`` makes it a SCHEDULED task."""
    body: dict[str, Any] = {"description": description, "files": _file_entries(files)}
    if priority is not None:
        body["priority"] = str(priority)
    if model is not None:
        body["model"] = model
    if scheduled_for is not None:
        when = scheduled_for.isoformat() if isinstance(scheduled_for, datetime) else scheduled_for
        body.update(type="SCHEDULED", scheduledFor=when)
    return (yield from one(Call("POST", "/tasks", _task, body)))


def get(task_id: str) -> Operation[TaskDetail]:
    """The task with its messages and files."""
    return (yield from one(Call("GET", _at(task_id), TaskDetail.model_validate)))


def tasks(
    status: TaskStatus | str | Sequence[TaskStatus | str] | None = None, *, limit: int = 100, offset: int = 0
) -> Operation[list[TaskOut]]:
    """Tasks newest first, of one status or several."""
    return (yield from page(status, limit=limit, offset=offset)).tasks


def page(
    status: TaskStatus | str | Sequence[TaskStatus | str] | None = None, *, limit: int = 100, offset: int = 0
) -> Operation[TaskPage]:
    """``tasks``, with how many the filter holds in all (a list's pages)."""
    params: dict[str, Any] = {"limit": limit, "offset": offset}
    if status is not None:
        params["statuses"] = ",".join([status] if isinstance(status, str) else [str(s) for s in status])
    return (yield from one(Call("GET", "/tasks", _page, params=params, raw=True)))


def _page(response: httpx.Response) -> TaskPage:
    tasks = _TASKS.validate_json(response.content)
    return TaskPage(tasks, int(response.headers.get("x-total-count", len(tasks))))


def messages(task_id: str, *, limit: int = 100, offset: int = 0) -> Operation[list[MessageOut]]:
    """The task's messages, oldest first."""
    call = Call(
        "GET",
        _at(task_id, "/messages"),
        _MESSAGES.validate_python,
        params={"limit": limit, "offset": offset},
    )
    return (yield from one(call))


def messages_from(task_id: str, offset: int = 0) -> Operation[list[MessageOut]]:
    """Every message of the task from ``offset`` on, oldest first, however many pages that takes."""
    out: list[MessageOut] = []
    while True:
        batch = yield from messages(task_id, limit=PAGE, offset=offset + len(out))
        out += batch
        if len(batch) < PAGE:
            return out


def reply(task_id: str, content: str | list[dict[str, Any]]) -> Operation[MessageOut]:
    """A message from the user; on a task that stopped (NEEDS_HELP, NEEDS_REVIEW ...) it runs again."""
    call = Call("POST", _at(task_id, "/messages"), MessageOut.model_validate, {"content": content})
    return (yield from one(call))


def take_over(task_id: str) -> Operation[TaskOut]:
    """A human takes the desktop: the agent takes no action until ``hand_back``."""
    return (yield from one(Call("POST", _at(task_id, "/takeover"), _task)))


def hand_back(task_id: str) -> Operation[TaskOut]:
    """Control goes back to the agent."""
    return (yield from one(Call("POST", _at(task_id, "/resume"), _task)))


def update(
    task_id: str,
    *,
    status: TaskStatus | str | None = None,
    priority: TaskPriority | str | None = None,
    description: str | None = None,
) -> Operation[TaskOut]:
    """Change the status (the allowed moves only), the priority, or the description of a PENDING task."""
    changes = {"status": status, "priority": priority, "description": description}
    body = {k: str(v) for k, v in changes.items() if v is not None}
    return (yield from one(Call("PATCH", _at(task_id), _task, body)))


def cancel(task_id: str) -> Operation[TaskOut]:
    """Cancel the task (a running one stops at once)."""
    return (yield from update(task_id, status=TaskStatus.CANCELLED))


def delete(task_id: str) -> Operation[None]:
    """Delete the task with its messages and files (a running one is cancelled first)."""
    yield from one(Call("DELETE", _at(task_id), _nothing))


def clear() -> Operation[int]:
    """Delete every task; how many there were."""
    count = 0
    while page := (yield from tasks(limit=PAGE)):
        for task in page:
            yield from delete(task.id)
        count += len(page)
    return count


def models() -> Operation[list[ModelOut]]:
    """The models tasks can name (empty when none is configured)."""
    return (yield from one(Call("GET", "/tasks/models", _MODELS.validate_python)))


def trajectory(task_id: str, path: str | Path, *, video: bool = False) -> Operation[Path]:
    """The task's trajectory (``GET /tasks/{id}/trajectory``: its steps and frames, docs/evaluation.md)
    saved as the zip ``path`` (its folders made as needed), e.g. for ``deskpilot replay``; ``video`` adds
    ``trajectory.mp4`` (ffmpeg where the service runs). The path written."""
    content = yield from archive(task_id, video=video)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(content)
    return path


def archive(task_id: str, *, video: bool = False) -> Operation[bytes]:
    """The task's trajectory as the zip's bytes (``trajectory`` saves them)."""
    params = {"video": "true"} if video else {}
    return (yield from one(Call("GET", _at(task_id, "/trajectory"), _content, params=params, raw=True)))


def _content(response: httpx.Response) -> bytes:
    return response.content


def desktops() -> Operation[list[DesktopOut]]:
    """The fleet's desktops (``GET /desktops``): each one's state, labels, URL and the task it runs."""
    return (yield from one(Call("GET", "/desktops", _DESKTOPS.validate_python)))


def health() -> Operation[dict[str, Any]]:
    return (yield from one(Call("GET", "/health", dict)))
