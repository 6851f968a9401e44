"""Clients that remember what a test sent: every desktop action and task API call, and the last screenshots,
for the pytest plugin's failure artifacts."""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from deskpilot.client.agent import Agent
from deskpilot.client.calls import Call
from deskpilot.computer.client import Desktop
from deskpilot.computer.results import ScreenImage, screenshot_of

KEEP_SCREENSHOTS = 3
ELIDED = ("data", "text")  # long fields shortened in the log (file contents, typed text)


@dataclass
class Record:
    """What a test sent, in order, and the last screenshots it got."""

    started: float = field(default_factory=time.monotonic)
    sent: list[dict[str, Any]] = field(default_factory=list)
    screenshots: deque[ScreenImage] = field(default_factory=lambda: deque(maxlen=KEEP_SCREENSHOTS))

    def add(self, service: str, what: str, body: Any, status: int | str) -> None:
        entry: dict[str, Any] = {"t": round(time.monotonic() - self.started, 3), "service": service}
        entry["request"] = what
        if isinstance(body, dict):
            entry["body"] = {k: _short(k, v) for k, v in body.items()}
        entry["outcome"] = status
        self.sent.append(entry)


def _short(name: str, value: Any) -> Any:
    if name in ELIDED and isinstance(value, str) and len(value) > 200:
        return f"{value[:200]}... ({len(value)} characters)"
    return value


class RecordingDesktop(Desktop):
    """A ``Desktop`` that logs every request into ``record`` and keeps the screenshots it receives."""

    def __init__(self, url: str, token: str | None, record: Record) -> None:
        super().__init__(url, token)
        self.record = record

    def _perform(self, body: dict[str, Any], what: str) -> dict[str, Any]:
        """An action, over the channel or HTTP: logged as the request it is, ``POST /computer-use``."""
        return self._recorded("/computer-use", body, lambda: Desktop._perform(self, body, what))

    def _post(self, path: str, body: dict[str, Any], what: str) -> dict[str, Any]:
        if path == "/computer-use":  # an action gone by HTTP: ``_perform`` logs it
            return super()._post(path, body, what)
        return self._recorded(path, body, lambda: Desktop._post(self, path, body, what))

    def _recorded(
        self, path: str, body: dict[str, Any], send: Callable[[], dict[str, Any]]
    ) -> dict[str, Any]:
        try:
            answer = send()
        except Exception as exc:
            self.record.add("desktop", f"POST {path}", body, getattr(exc, "status", type(exc).__name__))
            raise
        self.record.add("desktop", f"POST {path}", body, "ok")
        if body.get("action") == "screenshot":
            self.record.screenshots.append(screenshot_of(answer))
        return answer


class RecordingAgent(Agent):
    """An ``Agent`` that logs every request of the task API into ``record``."""

    def __init__(self, url: str, token: str | None, record: Record) -> None:
        super().__init__(url, token)
        self.record = record

    def _request(self, call: Call[Any]) -> dict[str, Any]:
        self.record.add("agent", call.what, call.body, "sent")
        return super()._request(call)
