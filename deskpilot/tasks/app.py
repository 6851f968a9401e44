"""The task service (port 9991): its app, its lifespan, its routes.

Run with ``uvicorn --factory deskpilot.tasks.app:create_app --port 9991`` (settings from the environment, see
``TaskSettings``); one process per desktop, since each runs that desktop's worker.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
from collections.abc import AsyncIterator
from typing import Any

from fastapi import FastAPI, Request
from fastapi.middleware.cors import CORSMiddleware
from fastapi.openapi.utils import get_openapi

from deskpilot import __version__, collector, config, logs, metrics, tracing
from deskpilot.computer.client import AsyncDesktop
from deskpilot.config import MetricsSettings, SecuritySettings, TaskSettings
from deskpilot.security import Guard, deny_framing, policy_for
from deskpilot.taskapi.requests import TaskCreate
from deskpilot.tasks.desktops import Identity, Registry
from deskpilot.tasks.events import EventHub
from deskpilot.tasks.executor import Executor, load_executor
from deskpilot.tasks.fanout import Fanout
from deskpilot.tasks.handlers import install_error_handlers, refusal
from deskpilot.tasks.metrics import TaskMetrics
from deskpilot.tasks.retention import sweep_forever
from deskpilot.tasks.routes import desktops, events, health, messages, tasks
from deskpilot.tasks.service import TaskService
from deskpilot.tasks.store import Store
from deskpilot.tasks.worker import Worker

log = logging.getLogger(__name__)

# bodies other than JSON the routes accept (415 for any other type)
OTHER_TYPES: dict[str, tuple[str, ...]] = {"/tasks": ("multipart/form-data",)}


def create_app(
    settings: TaskSettings | None = None,
    *,
    executor: Executor | None = None,
    desktop: AsyncDesktop | None = None,
    security: SecuritySettings | None = None,
    metrics_settings: MetricsSettings | None = None,
) -> FastAPI:
    """``security`` defaults to the environment (``DESKPILOT_*``): the token this service requires and
    sends to the desktop service; so does ``metrics_settings`` (``DESKPILOT_METRICS``)."""
    logs.configure()
    if settings is None:
        config.log_renamed_variables(log)
    settings = settings or TaskSettings()
    security = security or SecuritySettings()
    families = TaskMetrics(metrics.new_registry()) if metrics.enabled(metrics_settings) else None

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        store = await Store.open(settings.database_url, desktop_files_dir=settings.desktop_files_dir)
        hub = EventHub()
        store.subscribe(hub.publish)
        fanout = None if store.db.sqlite else Fanout(store, hub)
        if fanout is not None:
            await fanout.start()
        app.state.fanout = fanout
        client = desktop or AsyncDesktop(
            settings.desktop_url,
            settings.desktop_token.get_secret_value() if settings.desktop_token else security.token_value(),
            timeout=settings.desktop_timeout,
        )
        run = executor or load_executor(settings.executor)
        warming = _warm_up(run)
        worker = _worker(settings, store, run, client, families) if settings.worker_enabled else None
        if worker is not None:
            await worker.start()
        app.state.tasks = TaskService(settings, store, hub, client, worker, run, Registry(store))
        days = settings.trajectory_retention_days
        sweeping = asyncio.create_task(sweep_forever(store, days), name="retention") if days > 0 else None
        try:
            with collector.serving():
                yield
        finally:
            if sweeping is not None:
                sweeping.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await sweeping
            if warming is not None:
                warming.cancel()
            if worker is not None:
                await worker.stop()
            if desktop is None:
                await client.aclose()
            if fanout is not None:
                await fanout.stop()
            await store.close()
            await tracing.flush()

    telemetry = tracing.telemetry("deskpilot-tasks", server_spans=False)  # traces: tasks' runs (tracing.py)
    app = FastAPI(title="Deskpilot tasks", version=__version__, lifespan=lifespan, telemetry=telemetry)
    install_error_handlers(app)
    # Host, Origin, content type and token before any route (HTTP and /ws); CORS (configured origins only)
    # outside it: it answers preflights (no credentials), and lets a configured origin read refusals too.
    app.add_middleware(Guard, policy=policy_for("tasks", security, other_types=OTHER_TYPES), refuse=refusal)
    app.add_middleware(
        CORSMiddleware,
        allow_origins=[o.rstrip("/") for o in security.allowed_origins],
        allow_methods=["*"],
        allow_headers=["*"],
        expose_headers=["X-Total-Count"],
    )
    deny_framing(app)  # no response may be framed (its /docs, say), CORS answers and refusals included
    for module in (health, tasks, messages, events, desktops):
        app.include_router(module.router)
    if families is not None:  # GET /metrics, unless DESKPILOT_METRICS=off
        app.router.routes.append(metrics.route(families.registry, functools.partial(_scraped, families)))
    app.openapi = functools.partial(_openapi, app)  # type: ignore[method-assign]
    return app


def _openapi(app: FastAPI) -> dict[str, Any]:
    """FastAPI's schema plus ``TaskCreate``, which ``POST /tasks`` reads from JSON or multipart itself."""
    if app.openapi_schema is None:
        schema = get_openapi(title=app.title, version=app.version, routes=app.routes, description=__doc__)
        extra = TaskCreate.model_json_schema(by_alias=True, ref_template="#/components/schemas/{model}")
        components = schema.setdefault("components", {}).setdefault("schemas", {})
        components.update(extra.pop("$defs", {}))
        components["TaskCreate"] = extra
        app.openapi_schema = schema
    return app.openapi_schema


async def _scraped(families: TaskMetrics, request: Request) -> None:
    """What ``GET /metrics`` reads when scraped: the tasks by status, the desktops, the WebSocket clients."""
    service: TaskService = request.app.state.tasks
    await families.scraped(service.store, service.hub)


def _worker(
    settings: TaskSettings,
    store: Store,
    executor: Executor,
    desktop: AsyncDesktop,
    families: TaskMetrics | None = None,
) -> Worker:
    """This desktop's worker, known to the fleet by its desktop's name, labels and URL."""
    return Worker(
        store,
        executor,
        desktop,
        worker_id=settings.worker_id or None,
        lease_seconds=settings.lease_seconds,
        poll_seconds=settings.poll_seconds,
        identity=Identity.from_settings(settings),
        metrics=families,
    )


def _warm_up(executor: Executor) -> asyncio.Task[None] | None:
    """Start the executor's optional warm-up (the agent imports LiteLLM off the event loop) in the
    background: the API answers at once, and the first task does not pay for it."""
    warm = getattr(executor, "warm_up", None)
    if warm is None:
        return None

    async def run() -> None:
        try:
            await warm()
        except Exception:
            log.exception("the executor's warm-up failed; it will retry on first use")

    return asyncio.create_task(run(), name="executor warm-up")
