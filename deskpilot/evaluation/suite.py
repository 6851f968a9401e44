"""The task files of an evaluation suite (YAML), validated strictly so a typo is an error, not a pass.

id: save-a-note                          # unique in the suite; default: the file's name
instruction: Save the word "done" in ~/Desktop/note.txt.
setup:
  files: [{path: Documents/todo.txt, content: "buy milk"}]   # relative to the desktop user's home
  commands: ["mkdir -p ~/Documents/archive"]                # /bin/sh as the desktop user
  applications: [terminal]                                  # opened in this order
checks:                                  # every one must pass
  - file: {path: Desktop/note.txt, contains: done}         # exists / equals / contains / matches
  - command: {run: "ls ~/Documents/archive", exit_code: 0, contains: todo}
  - window: {title: "note.txt"}          # a window whose title matches (regular expression)
  - clipboard: {equals: done}
budget: {steps: 20, seconds: 300}        # more steps fail the task; the time cancels it; tokens: N (optional)
                                         # fails it past N of the model's tokens
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated, Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from deskpilot.computer.fields import ApplicationName
from deskpilot.errors import first_problem


class _TaskPart(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class TextMatch(_TaskPart):
    """How a text must look: ``equals`` it, ``contains`` it, or ``matches`` the regular expression."""

    equals: str | None = None
    contains: str | None = None
    matches: str | None = None

    @model_validator(mode="after")
    def _valid_pattern(self) -> TextMatch:
        if self.matches is not None:
            try:
                re.compile(self.matches)
            except re.error as exc:
                raise ValueError(f"matches: not a regular expression: {exc}") from None
        return self

    def problem(self, text: str) -> str | None:
        """Why ``text`` does not match, or None."""
        if self.equals is not None and text != self.equals:
            return f"is {_clip(text)!r}, not {self.equals!r}"
        if self.contains is not None and self.contains not in text:
            return f"does not contain {self.contains!r} (it is {_clip(text)!r})"
        if self.matches is not None and not re.search(self.matches, text, re.MULTILINE):
            return f"does not match /{self.matches}/ (it is {_clip(text)!r})"
        return None


class FileCheck(TextMatch):
    path: str = Field(min_length=1)
    exists: bool = True


class CommandCheck(TextMatch):
    run: str = Field(min_length=1)
    exit_code: int = 0


class WindowCheck(_TaskPart):
    title: str = Field(min_length=1, description="a regular expression a window's title must match")


class ClipboardCheck(TextMatch):
    pass


class Check(_TaskPart):
    """One check: exactly one of its fields is set."""

    file: FileCheck | None = None
    command: CommandCheck | None = None
    window: WindowCheck | None = None
    clipboard: ClipboardCheck | None = None

    @model_validator(mode="after")
    def _one(self) -> Check:
        if sum(v is not None for v in (self.file, self.command, self.window, self.clipboard)) != 1:
            raise ValueError("a check is exactly one of: file, command, window, clipboard")
        return self


class SetupFile(_TaskPart):
    path: str = Field(min_length=1)
    content: str = ""


class Setup(_TaskPart):
    files: list[SetupFile] = []
    commands: list[Annotated[str, Field(min_length=1)]] = []
    applications: list[ApplicationName] = []


class TaskBudget(_TaskPart):
    steps: int = Field(default=30, gt=0)
    seconds: float = Field(default=300, gt=0)
    tokens: int | None = Field(default=None, gt=0)  # the model's tokens, as the task API reports them


class EvalTask(_TaskPart):
    id: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
    instruction: str = Field(min_length=1)
    setup: Setup = Setup()
    checks: list[Check] = Field(min_length=1)
    budget: TaskBudget = TaskBudget()


class SuiteError(ValueError):
    """A task file that cannot be read or does not validate: the message names the file and the field."""


def load_suite(path: str | Path) -> list[EvalTask]:
    """The tasks of a suite: a YAML file, or every ``*.yaml`` of a folder (sorted by name)."""
    path = Path(path)
    files = sorted(path.glob("*.yaml")) if path.is_dir() else [path]
    if not files:
        raise SuiteError(f"{path}: no task files (*.yaml)")
    tasks = [load_task(f) for f in files]
    seen: set[str] = set()
    for task in tasks:
        if task.id in seen:
            raise SuiteError(f"{path}: two tasks are called {task.id!r}")
        seen.add(task.id)
    return tasks


def load_task(file: Path) -> EvalTask:
    try:
        data: Any = yaml.safe_load(file.read_text())
    except (OSError, yaml.YAMLError) as exc:
        raise SuiteError(f"{file}: {exc}") from None
    if not isinstance(data, dict):
        raise SuiteError(f"{file}: a task file is a mapping (id, instruction, setup, checks, budget)")
    data.setdefault("id", file.stem)
    try:
        return EvalTask.model_validate(data)
    except ValidationError as exc:
        raise SuiteError(f"{file}: {first_problem(exc)}") from None


def _clip(text: str, n: int = 200) -> str:
    return text if len(text) <= n else text[:n] + "…"
