"""Running a suite: each task on a clean desktop (``Sandbox.reset()``), its setup, the task through the task
API with the model under test, its checks, and what it cost (time, steps). With ``jobs=N``, N sandboxes run
the suite together, each a thread that takes the next task when it is free (the work is the appliances':
a job only waits on HTTP), and the results come back in the suite's order.

In replay mode (``replay=DIR``) no model runs: after the setup, the task's trajectory ``DIR/<task id>.zip``
(``GET /tasks/{id}/trajectory`` of an earlier run, saved by ``run_suite(..., save=DIR)``) is replayed on
the desktop, every step sent and its frame compared, and then the same checks decide."""

from __future__ import annotations

import contextlib
import queue
import threading
import time
import zipfile
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import httpx

from deskpilot.client.replay import ReplayResult, replay
from deskpilot.client.sandboxes import Sandbox
from deskpilot.computer.tools import PREFIX
from deskpilot.errors import ClientError
from deskpilot.evaluation.checks import (
    CheckResult,
    SetupFailed,
    run_check,
    run_setup_command,
    write_setup_file,
)
from deskpilot.evaluation.suite import EvalTask
from deskpilot.taskapi.types import MessageOut

TRAJECTORY = "/tasks/{task_id}/trajectory"
TRAJECTORIES = "trajectories"  # beside the report: each task's trajectory, <task id>.zip
UNREACHABLE = "UNREACHABLE"  # a task's status when the appliance stopped answering: the run is void

Boxes = Callable[[], AbstractContextManager[Sandbox]]  # opens one sandbox (a job's) for the block
Progress = Callable[["TaskResult"], None]


@dataclass
class TaskResult:
    id: str
    instruction: str
    passed: bool
    status: str  # the task's final status, or TIMEOUT / SETUP_FAILED / ERROR / UNREACHABLE
    seconds: float
    steps: int
    checks: list[CheckResult] = field(default_factory=list)
    task_id: str | None = None
    error: str = ""
    trajectory: str | None = None  # the task's trajectory (a zip) where it was kept, once downloaded
    replay: dict[str, object] | None = None  # in replay mode: the archive, its steps, the first divergence
    tokens: int = 0  # the model's, prompt and completion, as the provider reported them
    model: str | None = None  # the model that ran it, as the task service recorded it
    words: list[str] = field(default_factory=list)  # the model's text with each of its desktop steps
    desktop: str = ""  # the desktop service it ran on: which sandbox, when several run the suite


@dataclass
class SuiteResult:
    suite: str
    model: str | None  # the model(s) that ran, or the one asked for when no task got to run
    started: str
    results: list[TaskResult]
    replay: str | None = None  # the folder of trajectories replayed instead of a model
    seconds: float = 0.0  # wall time, the sandboxes' start included
    jobs: int = 1

    @property
    def passed(self) -> int:
        return sum(r.passed for r in self.results)

    @property
    def score(self) -> float:
        return self.passed / len(self.results) if self.results else 0.0

    @property
    def unreachable(self) -> bool:
        """Whether the appliance stopped answering during the run: its score measures nothing."""
        return any(r.status == UNREACHABLE for r in self.results)


class CannotRun(RuntimeError):
    """The suite cannot run at all: the appliance does not answer, or does not offer the model asked for."""


def run_suite(
    name: str,
    tasks: list[EvalTask],
    box: Sandbox | Boxes,
    model: str | None,
    replay: Path | None = None,
    out: Path | None = None,
    save: Path | None = None,
    *,
    jobs: int = 1,
    on_result: Progress | None = None,
) -> SuiteResult:
    """Each task with ``model`` on ``box``, or on ``jobs`` sandboxes at once, each opened by ``box()`` (a
    job's own, for its tasks in turn), ``on_result`` called with each result as it comes (one at a time);
    the trajectory kept as ``save/<task id>.zip`` (before the next task's reset deletes it). Or
    (``replay``) each by replaying ``replay/<task id>.zip``, a replay's diverging frames going to
    ``out/<task id>/``. CannotRun (or the sandbox's error) when a job could not start."""
    if isinstance(box, Sandbox) and jobs != 1:
        raise ValueError("one sandbox runs one task at a time: give a function that opens one per job")
    opened = box if not isinstance(box, Sandbox) else lambda: contextlib.nullcontext(box)
    started, clock = datetime.now(UTC).isoformat(timespec="seconds"), time.monotonic()
    pending: queue.SimpleQueue[tuple[int, EvalTask]] = queue.SimpleQueue()
    for item in enumerate(tasks):
        pending.put(item)
    results: list[TaskResult | None] = [None] * len(tasks)
    failures: list[BaseException] = []
    said = threading.Lock()

    # Every job starts its sandbox at once. Starting each once the one before was ready (one start alone is
    # ready sooner) was slower: a sandbox's task service imports LiteLLM after it is ready (~3.5 s of CPU),
    # and its first task waits for that import, so the later sandbox ran its first task late and beside the
    # first one's tasks (the smoke suite on two jobs: 17.2 against 16.6 s, docs/benchmarks.md).
    def job(n: int) -> None:
        try:
            if failures or pending.empty():  # nothing left for it: no sandbox to start
                return
            with opened() as sandbox:
                check_appliance(sandbox, None if replay else model)
                keep = save if replay is None and save is not None and offers_trajectories(sandbox) else None
                while not failures:
                    try:
                        index, task = pending.get_nowait()
                    except queue.Empty:
                        return
                    if replay is not None:
                        result = replay_task(task, sandbox, replay, out / task.id if out else None)
                    else:
                        result = run_task(task, sandbox, model)
                    result.desktop = sandbox.desktop_url
                    if keep is not None:
                        keep_trajectory(result, sandbox, keep)
                    results[index] = result
                    with said:
                        if on_result is not None:
                            on_result(result)
        except BaseException as exc:  # the other jobs stop after their task; the caller gets it
            failures.append(exc)

    count = sandboxes(jobs, len(tasks))
    threads = [threading.Thread(target=job, args=(n,), name=f"eval-job-{n}") for n in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if failures:
        raise failures[0]
    done = [r for r in results if r is not None]
    ran = sorted({r.model for r in done if r.model})
    who = None if replay is not None else (", ".join(ran) or model)
    suite = SuiteResult(name, who, started, done, str(replay) if replay else None, jobs=max(1, jobs))
    suite.seconds = round(time.monotonic() - clock, 2)
    return suite


def sandboxes(jobs: int, tasks: int) -> int:
    """How many sandboxes ``jobs`` jobs start for ``tasks`` tasks: none with no task for it."""
    return max(1, min(jobs, tasks))


def check_appliance(box: Sandbox, model: str | None) -> None:
    """CannotRun unless both services answer and ``model`` (when given) is one of ``GET /tasks/models``."""
    try:
        box.desktop.health()
        box.agent.health()
        names = [m.name for m in box.agent.models()] if model is not None else []
    except ClientError as exc:
        raise CannotRun(f"the appliance does not answer: {exc}") from exc
    if model is not None and model not in names:
        offered = ", ".join(names) or "none: it has no model configured"
        raise CannotRun(f"the appliance offers no model {model!r} (GET /tasks/models: {offered})")


def keep_trajectory(result: TaskResult, box: Sandbox, folder: Path) -> Path | None:
    """The task's trajectory downloaded to ``folder/<task id>.zip`` (ready for a replay run), noted in
    ``result.trajectory``; a failed download is said in ``result.error``."""
    if not result.task_id:
        return None
    try:
        path = box.agent.trajectory(result.task_id, folder / f"{result.id}.zip")
    except ClientError as exc:
        result.error = "; ".join(filter(None, [result.error, f"trajectory: {exc.detail}"]))
        return None
    result.trajectory = str(path)
    return path


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


def run_task(task: EvalTask, box: Sandbox, model: str | None) -> TaskResult:
    started = time.monotonic()
    result = TaskResult(task.id, task.instruction, False, "ERROR", 0.0, 0)
    try:
        box.reset()
        set_up(task, box)
        created = box.agent.create(task.instruction, model=model)
        result.task_id = created.id
        result.status = _wait(task, box, created.id)
        messages = box.agent.messages(created.id, limit=1000)
        result.steps, result.words = count_steps(messages), model_words(messages)
        detail = box.agent.get(created.id)
        result.tokens, result.model = detail.usage.total_tokens, detail.model
        result.checks = [run_check(check, box.desktop) for check in task.checks]
        result.error = over_budget(task, result)
        result.passed = (
            all(c.passed for c in result.checks) and not result.error and result.status != "TIMEOUT"
        )
    except SetupFailed as exc:
        result.status, result.error = "SETUP_FAILED", str(exc)
    except ClientError as exc:
        result.error = str(exc)
        if exc.status == 0:
            result.status = UNREACHABLE
    result.seconds = round(time.monotonic() - started, 2)
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


def model_words(messages: list[MessageOut]) -> list[str]:
    """What the model said with each of its desktop actions (``computer_*`` calls), in the order of the
    trajectory's agent steps: a message's text goes with its first such call."""
    words: list[str] = []
    for m in messages:
        if m.role != "ASSISTANT":
            continue
        calls = [
            b for b in m.content if b.get("type") == "tool_use" and str(b.get("name")).startswith(PREFIX)
        ]
        words += [m.text if n == 0 else "" for n in range(len(calls))]
    return words
