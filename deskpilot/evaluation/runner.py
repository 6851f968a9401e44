"""Running a suite: each task on a clean desktop (``Sandbox.reset()``), its setup, the task through the task
API with the model under test, its checks, and what it cost (time, steps).

In replay mode (``replay=DIR``) no model runs: after the setup, the task's trajectory ``DIR/<task id>.zip``
(``GET /tasks/{id}/trajectory`` of an earlier run, saved by ``run_suite(..., save=DIR)``) is replayed on
the desktop, every step sent and its frame compared, and then the same checks decide."""

from __future__ import annotations

import time
import zipfile
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import httpx

from deskpilot.client.replay import ReplayResult, replay
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
    replay: dict[str, object] | None = None  # in replay mode: the archive, its steps, the first divergence
    tokens: int = 0  # the model's, prompt and completion, as the provider reported them


@dataclass
class SuiteResult:
    suite: str
    model: str | None
    started: str
    results: list[TaskResult]
    replay: str | None = None  # the folder of trajectories replayed instead of a model

    @property
    def passed(self) -> int:
        return sum(r.passed for r in self.results)

    @property
    def score(self) -> float:
        return self.passed / len(self.results) if self.results else 0.0


def run_suite(
    name: str,
    tasks: list[EvalTask],
    box: Sandbox,
    model: str | None,
    replay: Path | None = None,
    out: Path | None = None,
    save: Path | None = None,
) -> SuiteResult:
    """Each task with ``model``, its trajectory saved as ``save/<task id>.zip`` (before the next task's
    reset deletes it); or (``replay``) each by replaying ``replay/<task id>.zip``, a replay's diverging
    frames going to ``out/<task id>/``."""
    started = datetime.now(UTC).isoformat(timespec="seconds")
    if replay is not None:
        results = [replay_task(task, box, replay, out / task.id if out else None) for task in tasks]
        return SuiteResult(name, None, started, results, replay=str(replay))
    links = offers_trajectories(box) or save is not None
    results = []
    for task in tasks:
        results.append(run_task(task, box, model, links))
        if save is not None:
            save_trajectory(results[-1], box, save)
    return SuiteResult(name, model, started, results)


def save_trajectory(result: TaskResult, box: Sandbox, folder: Path) -> Path | None:
    """The task's trajectory downloaded to ``folder/<task id>.zip``, ready for a replay run."""
    if not result.trajectory:
        return None
    headers = {"Authorization": f"Bearer {box.token}"} if box.token else {}
    response = httpx.get(result.trajectory, headers=headers, timeout=120)
    if response.status_code != 200:
        result.error = "; ".join(filter(None, [result.error, f"trajectory: {response.status_code}"]))
        return None
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{result.id}.zip").write_bytes(response.content)
    return folder / f"{result.id}.zip"


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
        set_up(task, box)
        created = box.agent.create(task.instruction, model=model)
        result.task_id = created.id
        result.status = _wait(task, box, created.id)
        result.steps = count_steps(box.agent.messages(created.id, limit=1000))
        result.tokens = box.agent.get(created.id).usage.total_tokens
        result.checks = [run_check(check, box.desktop) for check in task.checks]
        result.error = over_budget(task, result)
        result.passed = (
            all(c.passed for c in result.checks) and not result.error and result.status != "TIMEOUT"
        )
    except SetupFailed as exc:
        result.status, result.error = "SETUP_FAILED", str(exc)
    except ClientError as exc:
        result.error = str(exc)
    result.seconds = round(time.monotonic() - started, 2)
    if links and result.task_id:
        result.trajectory = box.agent_url + TRAJECTORY.replace("{task_id}", result.task_id)
    return result


def replay_task(task: EvalTask, box: Sandbox, folder: Path, out: Path | None = None) -> TaskResult:
    """Reset, set up, replay the task's trajectory from ``folder``, check: the model is not asked."""
    started = time.monotonic()
    result = TaskResult(task.id, task.instruction, False, "ERROR", 0.0, 0)
    archive = folder / f"{task.id}.zip"
    try:
        if not archive.is_file():
            raise ClientError(f"no trajectory {archive} to replay")
        box.reset()
        set_up(task, box)
        replayed = replay(archive, box.desktop, out=out, keep_going=True)
        result.status, result.steps = "REPLAYED", replayed.replayed
        result.replay = _replay_summary(replayed, archive)
        result.checks = [run_check(check, box.desktop) for check in task.checks]
        result.passed = all(c.passed for c in result.checks)
    except SetupFailed as exc:
        result.status, result.error = "SETUP_FAILED", str(exc)
    except (ClientError, OSError, ValueError, KeyError, zipfile.BadZipFile) as exc:
        result.error = f"replay: {exc}"
    result.seconds = round(time.monotonic() - started, 2)
    return result


def _replay_summary(replayed: ReplayResult, archive: Path) -> dict[str, object]:
    first = replayed.divergence
    return {
        "archive": str(archive),
        "steps": replayed.steps,
        "replayed": replayed.replayed,
        "skipped": replayed.skipped,
        "diverged": replayed.diverged,
        "firstDivergence": first and {"step": first.step, "changed": round(first.changed, 4)},
    }


def set_up(task: EvalTask, box: Sandbox) -> None:
    """The task's files, commands and applications, on a desktop the caller has reset."""
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


def over_budget(task: EvalTask, result: TaskResult) -> str:
    """Why the task went over its budget of steps or tokens; empty when it did not."""
    if result.steps > task.budget.steps:
        return f"{result.steps} steps, over the budget of {task.budget.steps}"
    if task.budget.tokens is not None and result.tokens > task.budget.tokens:
        return f"{result.tokens} tokens, over the budget of {task.budget.tokens}"
    return ""


def count_steps(messages: list[MessageOut]) -> int:
    """The agent's steps: its messages that act (carry a tool call)."""
    return sum(
        1
        for m in messages
        if m.role == "ASSISTANT" and any(block.get("type") == "tool_use" for block in m.content)
    )
