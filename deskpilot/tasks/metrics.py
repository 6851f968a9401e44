"""The task service's Prometheus families (``GET /metrics``, ``deskpilot.metrics``).

Recorded as things happen: by the worker, how long a task waited in the queue before its first claim (from
its creation, or its scheduled time when later) and how long each run took, by the status it left the task
in; by the agent loop through ``TaskContext.model_call``, each model call's duration by model and outcome
(``ok``, ``transient``: a rate limit, 5xx, connection error or time-out, ``rejected``: refused), and the
tokens it used. Read from the database when scraped: the tasks by status (one grouped count), the fleet's
desktops by state; and the WebSocket clients connected now. Model names are bounded (``metrics.Bounded``);
statuses, outcomes and states are fixed sets.
"""

from __future__ import annotations

from collections import Counter as Tally

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from sqlalchemy import func, select

from deskpilot.metrics import OTHER, Bounded, children
from deskpilot.taskapi.types import DesktopState, TaskStatus
from deskpilot.tasks.desktops import Registry
from deskpilot.tasks.events import EventHub
from deskpilot.tasks.models import Task
from deskpilot.tasks.store import Store

# seconds: a scripted run takes a second, a real one minutes, a long one an hour (AGENT_MAX_WALL_SECONDS)
RUN_BUCKETS = (1, 5, 10, 30, 60, 120, 300, 600, 1200, 1800, 3600, 7200)
WAIT_BUCKETS = (0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30, 60, 300, 600, 1800, 3600)
MODEL_BUCKETS = (0.1, 0.25, 0.5, 1, 2, 3, 5, 8, 13, 20, 30, 60, 120)
# how a run ended: the status it left the task in, "deleted", or "interrupted" (the worker stopped)
RUN_OUTCOMES = (*(s.lower() for s in TaskStatus), "deleted", "interrupted")
MODEL_OUTCOMES = ("ok", "transient", "rejected")
TOKEN_KINDS = ("prompt", "completion")


class TaskMetrics:
    def __init__(self, registry: CollectorRegistry) -> None:
        self.registry = registry
        tasks = Gauge("deskpilot_tasks", "Tasks in the database, by status", ["status"], registry=registry)
        self._tasks = {status: tasks.labels(status) for status in TaskStatus}
        runs = Histogram(
            "deskpilot_task_duration_seconds",
            "Runs of a task by this worker, claim to release, by the status the run left it in",
            ["outcome"],
            buckets=RUN_BUCKETS,
            registry=registry,
        )
        self._runs = children(runs.labels, RUN_OUTCOMES)
        self.queue_wait = Histogram(
            "deskpilot_queue_wait_seconds",
            "From a task's creation (or its scheduled time) to its first claim by a worker",
            buckets=WAIT_BUCKETS,
            registry=registry,
        )
        self._calls = Histogram(
            "deskpilot_model_call_duration_seconds",
            "Calls to a model (each attempt), by model and outcome: ok, transient (retried) or rejected",
            ["model", "outcome"],
            buckets=MODEL_BUCKETS,
            registry=registry,
        )
        self._tokens = Counter(
            "deskpilot_model_tokens",
            "Tokens the models reported using, by model and kind (prompt or completion)",
            ["model", "kind"],
            registry=registry,
        )
        self._models = Bounded()
        self.ws_clients = Gauge(
            "deskpilot_ws_clients", "WebSocket clients of /ws connected now", registry=registry
        )
        desktops = Gauge("deskpilot_desktops", "The fleet's desktops, by state", ["state"], registry=registry)
        self._desktops = {state: desktops.labels(state) for state in DesktopState}

    # ---------------------------------------------------------------------------- recorded as it happens

    def claimed(self, task: Task) -> None:
        """A worker claimed ``task``: its wait, on its first claim only (later ones follow a run)."""
        if task.executed_at is None or task.executed_at != task.updated_at:
            return
        due = max(task.created_at, task.scheduled_for or task.created_at)
        self.queue_wait.observe(max(0.0, (task.executed_at - due).total_seconds()))

    def ran(self, seconds: float, outcome: str) -> None:
        self._runs.get(outcome, self._runs[OTHER]).observe(seconds)

    def model_call(self, model: str, outcome: str, seconds: float, tokens: tuple[int, int]) -> None:
        """One attempt at a model call; ``tokens``: (prompt, completion) it used."""
        name = self._models(model)
        self._calls.labels(name, outcome if outcome in MODEL_OUTCOMES else OTHER).observe(seconds)
        for kind, count in zip(TOKEN_KINDS, tokens, strict=True):
            if count > 0:
                self._tokens.labels(name, kind).inc(count)

    # --------------------------------------------------------------------------------- read when scraped

    async def scraped(self, store: Store, hub: EventHub) -> None:
        async with store.reading() as session:
            rows = (await session.execute(select(Task.status, func.count()).group_by(Task.status))).all()
        counts = {status: count for status, count in rows}
        for status, child in self._tasks.items():
            child.set(counts.get(status, 0))
        states = Tally(d["state"] for d in await Registry(store).listing())
        for state, child in self._desktops.items():
            child.set(states[state])
        self.ws_clients.set(hub.clients)
