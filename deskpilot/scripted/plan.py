"""A plan: which replies the scripted model gives, per task, step by step.

    model: scripted                 # the model name it serves (optional)
    tasks:
      - match: "hello file"         # a regular expression, searched case-insensitively in the task's text
        steps:                      # step n answers the model's n-th call in the task's conversation
          - tool: computer_application
            args: {application: terminal}
          - calls:                  # several tool calls in one reply
              - {tool: computer_type_text, args: {text: "echo hi > ~/Desktop/hello.txt\\n"}}
              - {tool: computer_wait, args: {duration: 200}}
          - text: Which name should the file have?   # no tool call: the task goes to NEEDS_HELP
          - tool: set_task_status
            args: {status: completed, description: done}
          - error: 503              # the provider fails (503/429: the agent retries)

The step is chosen by counting the model's replies already in the conversation the agent sends, so the plan
holds no state: a NEEDS_HELP answered by a human continues with the next step, several tasks can run at
once, and a restarted server picks up where the task is. A task no entry matches, or one that asks for more
steps than its entry has, gets a 400 naming it, which fails the task with that message.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from deskpilot.scripted.steps import Answer, Request


class PlanError(ValueError):
    """A plan that cannot be read: the message names the file and what is wrong."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ToolCall(_Strict):
    tool: str
    args: dict[str, Any] = Field(default_factory=dict)


class PlanStep(_Strict):
    text: str | None = None
    tool: str | None = None
    args: dict[str, Any] = Field(default_factory=dict)
    calls: list[ToolCall] = Field(default_factory=list)
    error: int | None = Field(default=None, ge=400, le=599)

    def step(self) -> Answer:
        calls = [(self.tool, self.args)] if self.tool else []
        calls += [(c.tool, c.args) for c in self.calls]
        if self.error is not None:
            return Answer(text=self.text, status=self.error)
        if not calls and self.text is None:
            raise ValueError("a step needs a text, a tool, calls or an error")
        return Answer(text=self.text, calls=calls)


class PlanTask(_Strict):
    match: str
    steps: list[PlanStep] = Field(min_length=1)

    @field_validator("match")
    @classmethod
    def _compiles(cls, value: str) -> str:
        try:
            re.compile(value)
        except re.error as exc:
            raise ValueError(f"not a regular expression: {exc}") from None
        return value


class Plan(_Strict):
    model: str = "scripted"
    tasks: list[PlanTask] = Field(min_length=1)

    @classmethod
    def load(cls, path: str | Path) -> Plan:
        """A plan from a YAML file (PyYAML: ``pip install "deskpilot[client]"``) or a JSON one."""
        path = Path(path)
        try:
            source = path.read_text()
        except OSError as exc:
            raise PlanError(f"cannot read the plan {path}: {exc.strerror}") from None
        return cls.parse(source, str(path))

    @classmethod
    def parse(cls, source: str, name: str = "the plan") -> Plan:
        try:
            data = json.loads(source)
        except ValueError:
            data = _yaml(source, name)
        try:
            plan = cls.model_validate(data)
            for task in plan.tasks:
                for step in task.steps:
                    step.step()
        except (ValidationError, ValueError) as exc:
            raise PlanError(f"{name} is not a valid plan: {exc}") from None
        return plan

    def answer(self, request: Request) -> Answer:
        """The step for this point of this task's conversation, or a 400 saying why there is none."""
        task_text, turn = request.task_text, request.turn
        for task in self.tasks:
            if re.search(task.match, task_text, re.IGNORECASE):
                if turn < len(task.steps):
                    return task.steps[turn].step()
                return Answer(
                    status=400,
                    text=f"scripted model: the plan for /{task.match}/ has {len(task.steps)} steps; "
                    f"the agent asks for step {turn + 1}",
                )
        return Answer(status=400, text=f"scripted model: no task of the plan matches {task_text[:200]!r}")


def _yaml(source: str, name: str) -> Any:
    try:
        import yaml
    except ImportError:
        need = 'YAML plans need PyYAML: pip install "deskpilot[client]"'
        raise PlanError(f"{name} is not JSON; {need}") from None
    try:
        return yaml.safe_load(source)
    except yaml.YAMLError as exc:
        raise PlanError(f"{name} is not valid YAML: {exc}") from None
