"""The agent loop, as the queue worker's Executor: the model looks at the screen and acts until the task
is done, needs a human, or a guard stops it.

One run of a task (the worker calls `AgentExecutor.execute` with the task IN_PROGRESS):

1. a fresh screenshot is stored as a USER message, so the model always starts from the current screen;
2. each step: context = task + latest Summary + newer messages (only the newest screenshots kept) →
   one LLM call → its reply stored as an ASSISTANT message of content blocks → each tool call run
   (desktop actions wait for control, act, wait for the screen to settle, return a screenshot) →
   the results stored as one USER message of ``tool_result`` blocks;
3. the run ends when the model calls ``set_task_status``, answers without a tool call (a question:
   NEEDS_HELP), a budget or the repeated-action breaker trips (NEEDS_HELP with the reason), or the
   LLM keeps failing / no provider is configured (FAILED with ``error``).

A human's message on NEEDS_HELP / NEEDS_REVIEW re-queues the task (the store does that) and the next
run continues the same conversation.
"""

from __future__ import annotations

import asyncio
import logging
import posixpath
import time
from collections import deque
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import httpx
from opentelemetry import trace
from pydantic import ValidationError

from deskpilot.agent.computer import Computer, DesktopDown, ToolOutcome
from deskpilot.agent.context import (
    ASSISTANT,
    USER,
    Turn,
    estimate_tokens,
    image_block,
    text_block,
    to_openai,
    tool_result_block,
)
from deskpilot.agent.guards import Budget, RepeatGuard
from deskpilot.agent.litellm_loader import litellm_module
from deskpilot.agent.llm import LLM, LLMError, Reply, Usage
from deskpilot.agent.tools import CreateTask, SetTaskStatus, tool_definitions
from deskpilot.computer.fields import APPLICATION_NAMES, DESKTOP_DIR
from deskpilot.computer.tools import PREFIX
from deskpilot.config import AgentSettings
from deskpilot.errors import UpstreamUnavailable
from deskpilot.taskapi.types import TaskStatus

if TYPE_CHECKING:
    from deskpilot.tasks.executor import TaskContext
    from deskpilot.tasks.models import Message, Summary, Task

log = logging.getLogger(__name__)
tracer = trace.get_tracer(__name__)

FINAL_STATUS = {
    "completed": TaskStatus.COMPLETED,
    "needs_help": TaskStatus.NEEDS_HELP,
    "needs_review": TaskStatus.NEEDS_REVIEW,
    "failed": TaskStatus.FAILED,
}

SYSTEM_PROMPT = """\
You are Deskpilot, an agent that operates a Linux desktop (XFCE-style, user `user`, home {home} with
Desktop, Documents and Downloads) to carry out the user's task. You see the screen as {width}x{height}
screenshots; every coordinate you give is in those pixels. Today is {today}.

How to work:
- Act with the computer_* tools. After each action you get a screenshot of the settled screen; look at it
  before the next step. Prefer keyboard shortcuts and computer_application to open programs
  ({programs}).
- Files uploaded with the task are on the desktop ({desktop}); read them with computer_read_file.
- When the task is done, call set_task_status with status "completed" and a description of the result.
  If you need information or a decision from the human, call set_task_status with "needs_help" and your
  question. If the result should be checked by a human before it counts as done, use "needs_review".
  If the task cannot be done, use "failed" with the reason.
- Never end a turn without calling a tool unless you are asking the human a question.
"""

STEPS_KEPT = 256

HANDED_BACK = "A human had control of the desktop before this action ran; the screen may have changed."

SUMMARY_PROMPT = """\
Summarise the work on this task so far for your own later use: the task, what has been done, what
was found (exact names, paths, values), the current state of the screen and what remains to do.
Be complete but concise; the earlier messages will be replaced by this summary."""


@dataclass
class Step:
    """Timings of one step, in seconds (the bench reads them)."""

    llm: float = 0.0
    tools: float = 0.0
    store: float = 0.0
    total: float = 0.0


class AgentExecutor:
    """The task service's default Executor (``TASKS_EXECUTOR=deskpilot.agent.executor:AgentExecutor``)."""

    computer_class: type[Computer] = Computer

    def __init__(self, settings: AgentSettings | None = None, llm: LLM | None = None) -> None:
        self.settings = settings or AgentSettings()
        self.llm = llm or LLM(self.settings)
        # timings of the latest steps (the bench reads them); bounded, the service runs for months
        self.steps: deque[Step] = deque(maxlen=STEPS_KEPT)

    async def warm_up(self) -> None:
        """Import LiteLLM (seconds of work, in a thread) while the service starts, so neither the first
        task nor the first ``GET /tasks/models`` waits for it. Nothing is imported when no model is
        configured: every task fails at once then, and the process stays small."""
        if self.llm.configured():
            await litellm_module()

    async def execute(self, task_id: str, ctx: TaskContext) -> None:
        await Run(self, task_id, ctx).run()

    async def models(self) -> list[dict[str, Any]]:
        """``GET /tasks/models``: the LiteLLM proxy's models (``/model/info``) when AGENT_LLM_PROXY_URL is
        set, else the models of the providers whose keys are set."""
        try:
            return await self.llm.models()
        except httpx.HTTPError as exc:
            raise UpstreamUnavailable(
                f"LLM proxy at {self.settings.llm_proxy_url} did not answer /model/info: {exc!r}"
            ) from exc


class Run:
    """One run of one task."""

    def __init__(self, executor: AgentExecutor, task_id: str, ctx: TaskContext) -> None:
        self.executor = executor
        self.settings = executor.settings
        self.llm = executor.llm
        self.task_id = task_id
        self.ctx = ctx
        self.computer = executor.computer_class(ctx.desktop, self.settings)
        self.budget = Budget(
            self.settings.max_steps, self.settings.max_tokens, self.settings.max_wall_seconds
        )
        self.guard = RepeatGuard(self.settings.repeat_limit)
        self._messages: list[Message] = []  # the task's messages so far, oldest first
        self._summary: Summary | None = None
        self._unsaved = Usage()  # a summary's tokens, counted with the next reply's message
        self._loaded = False
        self.tools = tool_definitions(self.computer.image)
        self.system = SYSTEM_PROMPT.format(
            width=self.computer.image.width,
            height=self.computer.image.height,
            today=datetime.now(UTC).strftime("%A %Y-%m-%d"),
            home=posixpath.dirname(DESKTOP_DIR),
            desktop=DESKTOP_DIR,
            programs=", ".join(a for a in APPLICATION_NAMES if a != "desktop"),  # "desktop" is not a program
        )

    # ------------------------------------------------------------------------------------------ the run

    async def run(self) -> None:
        task = await self.ctx.task()
        try:
            route = self.llm.route(task.model)
        except LLMError as exc:
            await self.ctx.update(status=TaskStatus.FAILED, error=exc.message)
            return
        if task.model is None:  # record which model ran it
            task = await self.ctx.update(model=route.name)
        trace.get_current_span().set_attribute("deskpilot.model", route.name)  # the worker's task span
        log.info("agent run started", extra={"task": self.task_id, "model": route.name})
        try:
            await self._loop(task)
        except DesktopDown as exc:
            await self.ctx.update(
                status=TaskStatus.FAILED, error=f"The desktop service is unavailable: {exc}"
            )

    async def _loop(self, task: Task) -> None:
        window = await self.llm.context_window(task.model)
        await self.ctx.wait_for_control()
        shot = await self.computer.screenshot()
        await self.ctx.add_message([text_block("The screen now:"), image_block(shot)], role=USER)
        context_tokens = 0
        while True:
            with tracer.start_as_current_span("step", attributes={"deskpilot.step": self.budget.steps + 1}):
                step = Step()
                t0 = time.perf_counter()
                if reason := self.budget.exceeded():
                    await self._needs_help(reason)
                    return
                if context_tokens >= self.settings.summarize_at * window:
                    if not await self._summarise(task):
                        return
                    context_tokens = 0
                messages = await self._context(task)
                t1 = time.perf_counter()
                try:
                    reply = await self.llm.complete(messages, self.tools, task.model, self.ctx.model_call)
                except LLMError as exc:
                    await self.ctx.update(status=TaskStatus.FAILED, error=exc.message)
                    return
                t2 = time.perf_counter()
                # servers that report no usage (some local ones) still get budgets and summaries
                used = reply.usage.total or estimate_tokens(messages)
                self.budget.spend(used)
                context_tokens = used
                blocks = reply.blocks or [text_block("(empty answer)")]
                # the reply is stored while its tools run (a DB write saved from every step's latency)
                saving = asyncio.create_task(
                    self.ctx.add_message(blocks, role=ASSISTANT, tokens=self._tokens(reply))
                )
                uses = reply.tool_uses
                if not uses:  # a question for the human, never a silent retry
                    await saving
                    step.llm, step.total = t2 - t1, time.perf_counter() - t0
                    self._log_step(step, uses, used)
                    await self.ctx.update(status=TaskStatus.NEEDS_HELP)
                    return
                t3 = time.perf_counter()
                try:
                    results, final, tripped = await self._run_tools(uses)
                finally:
                    await saving
                t4 = time.perf_counter()
                await self.ctx.add_message(results, role=USER)
                t5 = time.perf_counter()
                step.llm, step.tools = t2 - t1, t4 - t3
                step.total = t5 - t0
                step.store = step.total - step.llm - step.tools
                self.executor.steps.append(step)
                self._log_step(step, uses, used)
                if final is not None:
                    await self._finish(final)
                    return
                if tripped:
                    await self._needs_help(tripped)
                    return

    async def _run_tools(
        self, uses: list[dict[str, Any]]
    ) -> tuple[list[dict[str, Any]], SetTaskStatus | None, str | None]:
        results: list[dict[str, Any]] = []
        final: SetTaskStatus | None = None
        tripped: str | None = None
        for use in uses:
            name, args = use["name"], use["input"]
            if final is not None or tripped:
                results.append(tool_result_block(use["id"], [text_block("Not executed.")], is_error=True))
                continue
            if name == "set_task_status":
                try:
                    final = SetTaskStatus.model_validate(args)
                except ValidationError as exc:
                    outcome = ToolOutcome(
                        [text_block(f"Invalid arguments: {exc.errors()[0]['msg']}")], is_error=True
                    )
                else:
                    outcome = ToolOutcome([text_block(f"Task status set to {FINAL_STATUS[final.status]}.")])
            elif name == "create_task":
                outcome = await self._create_task(args)
            elif name == "zoom":
                outcome = await self.computer.zoom(args)
            elif name == "elements":  # a read, as zoom: no need to wait for control
                outcome = await self.computer.elements()
            elif name.startswith(PREFIX):
                taken = not await self.ctx.has_control()
                if taken:  # no desktop action while a human holds control (POST /tasks/:id/takeover)
                    await self.ctx.wait_for_control()
                outcome = await self.computer.run(name.removeprefix(PREFIX), args)
                if taken:
                    outcome.content.insert(0, text_block(HANDED_BACK))
                tripped = self.guard.record(name, args, outcome.key)
            else:
                outcome = ToolOutcome([text_block(f"Unknown tool {name!r}.")], is_error=True)
            results.append(tool_result_block(use["id"], outcome.content, outcome.is_error))
        return results, final, tripped

    async def _create_task(self, args: dict[str, Any]) -> ToolOutcome:
        try:
            req = CreateTask.model_validate(args)
        except ValidationError as exc:
            return ToolOutcome([text_block(f"Invalid arguments: {exc.errors()[0]['msg']}")], is_error=True)
        task = await self.ctx.create_task(req.description, req.priority, req.scheduledFor)
        return ToolOutcome([text_block(f"Created task {task.id} ({task.status}).")], key=task.id)

    async def _finish(self, final: SetTaskStatus) -> None:
        status = FINAL_STATUS[final.status]
        if status == TaskStatus.COMPLETED:
            await self.ctx.update(status=status, result={"description": final.description})
        elif status == TaskStatus.FAILED:
            await self.ctx.update(status=status, error=final.description)
        else:
            await self.ctx.update(status=status)

    def _log_step(self, step: Step, uses: list[dict[str, Any]], tokens: int) -> None:
        """One line per step: names and timings only (arguments and screenshots stay in the database); the
        same on the step's span."""
        tools = ",".join(use["name"] for use in uses) or "none"
        trace.get_current_span().set_attributes({"deskpilot.tools": tools, "deskpilot.tokens": tokens})
        log.info(
            "agent step",
            extra={
                "task": self.task_id,
                "step": self.budget.steps,
                "tools": tools,
                "llm_ms": round(step.llm * 1000, 1),
                "tools_ms": round(step.tools * 1000, 1),
                "step_ms": round(step.total * 1000, 1),
                "tokens": tokens,
            },
        )

    async def _needs_help(self, reason: str) -> None:
        """A budget or the repeated-action breaker tripped: the human decides whether to go on."""
        log.warning(
            "agent run stopped", extra={"task": self.task_id, "step": self.budget.steps, "reason": reason}
        )
        await self.ctx.add_message([text_block(reason)], role=ASSISTANT)
        await self.ctx.update(status=TaskStatus.NEEDS_HELP)

    # -------------------------------------------------------------------------------------- the context

    async def _history(self) -> tuple[Summary | None, list[Message]]:
        """The latest summary and the messages after it. Messages only ever get appended, so each step
        fetches just the new ones (its own, and any a human sent meanwhile) instead of the whole history
        with every screenshot in it."""
        if not self._loaded:
            summaries = await self.ctx.summaries()
            self._summary = summaries[-1] if summaries else None
            self._loaded = True
        self._messages += await self.ctx.messages(offset=len(self._messages))
        if self._summary is None:
            return None, self._messages
        return self._summary, [m for m in self._messages if m.created_at > self._summary.created_at]

    async def _context(self, task: Task) -> list[dict[str, Any]]:
        summary, messages = await self._history()
        prefix: list[Turn] = []
        if summary is not None:
            prefix.append(
                Turn(
                    USER,
                    [
                        text_block(f"The task: {task.description}"),
                        text_block(f"Summary so far:\n{summary.content}"),
                    ],
                )
            )
        turns = [Turn(m.role, m.content) for m in messages]
        return to_openai(self.system, turns, self.settings.keep_screenshots, prefix=prefix)

    def _tokens(self, reply: Reply) -> tuple[int, int]:
        """The (prompt, completion) tokens to record with this reply: its own and an unsaved summary's."""
        unsaved, self._unsaved = self._unsaved, Usage()
        return (
            reply.usage.prompt_tokens + unsaved.prompt_tokens,
            reply.usage.completion_tokens + unsaved.completion_tokens,
        )

    async def _summarise(self, task: Task) -> bool:
        """Fold the history into a new Summary record; the next context starts from it. False: run over."""
        summary, _ = await self._history()
        messages = await self._context(task)
        messages.append({"role": "user", "content": SUMMARY_PROMPT})
        try:
            reply = await self.llm.complete(messages, None, task.model, self.ctx.model_call)
        except LLMError as exc:
            await self.ctx.update(status=TaskStatus.FAILED, error=exc.message)
            return False
        self.budget.spend(reply.usage.total)
        self._unsaved = reply.usage
        self._summary = await self.ctx.add_summary(reply.text, parent_id=summary.id if summary else None)
        log.info(
            "agent summarised the history",
            extra={"task": self.task_id, "summary_chars": len(reply.text), "tokens": reply.usage.total},
        )
        # the summary replaces every message so far; show the model the screen again
        await self.ctx.wait_for_control()
        shot = await self.computer.screenshot()
        await self.ctx.add_message([text_block("The screen now:"), image_block(shot)], role=USER)
        return True
