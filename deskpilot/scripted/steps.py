"""What a scripted model answers (a ``Answer``) and what it was asked (a ``Request``).

A step is one reply of the model: text, tool calls, or an HTTP error as a provider would answer it. Build
them with ``tool``, ``tools``, ``text`` and ``fail``, or from a plan's YAML (``plan.py``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class Answer:
    """One scripted reply: text and/or tool calls, or an HTTP error (``status`` other than 200)."""

    text: str | None = None
    calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    status: int = 200
    prompt_tokens: int = 100
    completion_tokens: int = 20


def tool(name: str, /, **arguments: Any) -> Answer:
    """A reply calling one tool: ``tool("computer_click_mouse", coordinates={"x": 1, "y": 2})``."""
    return Answer(calls=[(name, arguments)])


def tools(*calls: Answer) -> Answer:
    """A reply with several tool calls: ``tools(tool(...), tool(...))``."""
    return Answer(calls=[c for s in calls for c in s.calls])


def text(content: str, **kw: Any) -> Answer:
    """A plain answer with no tool call: the agent takes it as a question for a human (NEEDS_HELP)."""
    return Answer(text=content, **kw)


def fail(status: int = 503) -> Answer:
    """An HTTP error from the 'provider' (503 and 429 are transient for the agent, 400 and 401 are not)."""
    return Answer(status=status)


@dataclass
class Request:
    """What the agent sent in one ``/chat/completions`` call."""

    body: dict[str, Any]
    headers: dict[str, str]

    @property
    def messages(self) -> list[dict[str, Any]]:
        messages = self.body.get("messages")
        return messages if isinstance(messages, list) else []

    @property
    def tool_names(self) -> list[str]:
        return [t["function"]["name"] for t in self.body.get("tools", [])]

    @property
    def turn(self) -> int:
        """How many replies of the model the conversation holds: the index of the step to answer with."""
        return sum(1 for m in self.messages if m.get("role") == "assistant")

    @property
    def task_text(self) -> str:
        """The first user message's text: the task's description (what a plan matches on)."""
        return next(iter(self.text_of("user")), "")

    def tool_results(self) -> list[dict[str, Any]]:
        return [m for m in self.messages if m.get("role") == "tool"]

    def images(self) -> list[str]:
        """Every image URL (``data:image/png;base64,...``) anywhere in the conversation, in order."""
        return [p["image_url"]["url"] for p in self._parts() if p.get("type") == "image_url"]

    def text_of(self, role: str) -> list[str]:
        """The text of each message of ``role``, in order."""
        out: list[str] = []
        for message in self.messages:
            if message.get("role") != role:
                continue
            content = message.get("content")
            if isinstance(content, str):
                out.append(content)
            elif isinstance(content, list):
                out += [p.get("text", "") for p in content if p.get("type") == "text"]
        return out

    def last_tool_result_has_image(self) -> bool:
        """The screenshot after the last tool call: an image in the messages after the last tool result."""
        last = max((i for i, m in enumerate(self.messages) if m.get("role") == "tool"), default=None)
        return last is not None and any(
            p.get("type") == "image_url" for p in self._parts(self.messages[last:])
        )

    def _parts(self, messages: list[dict[str, Any]] | None = None) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        for message in self.messages if messages is None else messages:
            content = message.get("content")
            if isinstance(content, list):
                out += [p for p in content if isinstance(p, dict)]
        return out
