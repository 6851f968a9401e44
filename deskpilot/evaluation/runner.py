"""Running a suite: each task on a clean desktop (``Sandbox.reset()``), its setup, the task through the task
API with the model under test, its checks, and what it cost (time, steps)."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from datetime import UTC, datetime

import httpx

from deskpilot.client.sandboxes import Sandbox
from deskpilot.errors import ClientError
from deskpilot.evaluation.checks import (
    CheckResult,
    SetupFailed,
    run_check,
    run_setup_command,
    write_setup_file,
)
from deskpilot.evaluation.suite import EvalTask
from deskpilot.tasks.types import MessageOut

TRAJECTORY = "/tasks/{task_id}/trajectory"


@dataclass
class TaskResult:
    id: str
    instruction: str
    passed: bool
    status: str  # the task's final status, or TIMEOUT / SETUP_FAILED / ERROR
    seconds: float
    steps: int
    checks: list[CheckResult] = field(default_factory=list)
    task_id: str | None = None
    error: str = ""
    trajectory: str | None = None  # where the task's history downloads, when the service offers it


@dataclass
class SuiteResult:
    suite: str
    model: str | None
    started: str
    results: list[TaskResult]

    @property
    def passed(self) -> int:
        return sum(r.passed for r in self.results)

    @property
    def score(self) -> float:
        return self.passed / len(self.results) if self.results else 0.0


def run_suite(name: str, tasks: list[EvalTask], box: Sandbox, model: str | None) -> SuiteResult:
    started = datetime.now(UTC).isoformat(timespec="seconds")
    links = offers_trajectories(box)
    return SuiteResult(name, model, started, [run_task(task, box, model, links) for task in tasks])


def offers_trajectories(box: Sandbox) -> bool:
    """Whether the task service serves ``GET /tasks/{id}/trajectory`` (its OpenAPI document says)."""
    headers = {"Authorization": f"Bearer {box.token}"} if box.token else {}
    try:
        paths = (
            httpx.get(f"{box.agent_url}/openapi.json", headers=headers, timeout=10).json().get("paths", {})
        )
    except (httpx.HTTPError, ValueError, AttributeError):
        return False
    return TRAJECTORY in paths


def run_task(task: EvalTask, box: Sandbox, model: str | None, links: bool = False) -> TaskResult:
    started = time.monotonic()
    result = TaskResult(task.id, task.instruction, False, "ERROR", 0.0, 0)
    try:
        box.reset()
        _set_up(task, box)
        created = box.agent.create(task.instruction, model=model)
        result.task_id = created.id
        result.status = _wait(task, box, created.id)
        result.steps = count_steps(box.agent.messages(created.id, limit=1000))
        result.checks = [run_check(check, box.desktop) for check in task.checks]
        over = result.steps > task.budget.steps
        if over:
            result.error = f"{result.steps} steps, over the budget of {task.budget.steps}"
        result.passed = all(c.passed for c in result.checks) and not over and result.status != "TIMEOUT"
    except SetupFailed as exc:
        result.status, result.error = "SETUP_FAILED", str(exc)
    except ClientError as exc:
        result.error = str(exc)
    result.seconds = round(time.monotonic() - started, 2)
    if links and result.task_id:
        result.trajectory = box.agent_url + TRAJECTORY.replace("{task_id}", result.task_id)
    return result


def _set_up(task: EvalTask, box: Sandbox) -> None:
    for f in task.setup.files:
        write_setup_file(box.desktop, f.path, f.content)
    for command in task.setup.commands:
        run_setup_command(box.desktop, command)
    for app in task.setup.applications:
        box.desktop.application(app)


def _wait(task: EvalTask, box: Sandbox, task_id: str) -> str:
    """The task's final status; a task still running at the end of its budget is cancelled (TIMEOUT)."""
    try:
        return str(box.agent.wait(task_id, timeout=task.budget.seconds).status)
    except TimeoutError:
        box.agent.cancel(task_id)
        return "TIMEOUT"


def count_steps(messages: list[MessageOut]) -> int:
    """The agent's steps: its messages that act (carry a tool call)."""
    return sum(
        1
        for m in messages
        if m.role == "ASSISTANT" and any(block.get("type") == "tool_use" for block in m.content)
    )
