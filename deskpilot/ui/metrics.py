"""The UI's Prometheus family (``GET /metrics``, ``deskpilot.metrics``): HTTP requests by route and status.

The route is the template the request matched (``/tasks/{task_id}``, ``/api/{path:path}``) or the mount it
reached (``/static``), never the raw path; a request that reached none (refused by the guard, or no such
page) is ``unmatched``. A request is counted when its answer starts, so a long stream (a proxied event
stream) is counted at once. WebSockets (the proxied ``/api/ws`` and live view) are not HTTP requests here.
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter
from starlette.routing import Mount, Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

UNMATCHED = "unmatched"


class RequestCounter:
    """ASGI middleware, outside the guard (its refusals count): ``deskpilot_http_requests_total``."""

    def __init__(self, app: ASGIApp, registry: CollectorRegistry) -> None:
        self.app = app
        self.requests = Counter(
            "deskpilot_http_requests",
            "HTTP requests answered, by route template (unmatched: refused, or no such route) and status",
            ["route", "code"],
            registry=registry,
        )
        self._children: dict[tuple[str, int], Counter] = {}  # routes x statuses: bounded by the app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        counted = False

        async def sending(message: Message) -> None:
            nonlocal counted
            if message["type"] == "http.response.start" and not counted:
                counted = True
                self.count(scope, message["status"])
            await send(message)

        try:
            await self.app(scope, receive, sending)
        except BaseException:
            if not counted:  # the server answers 500 (or nothing, to a client that went away)
                self.count(scope, 500)
            raise

    def count(self, scope: Scope, status: int) -> None:
        key = (route_of(scope), status)
        child = self._children.get(key)
        if child is None:
            child = self._children[key] = self.requests.labels(key[0], str(status))
        child.inc()


def route_of(scope: Scope) -> str:
    """The template of the route the router chose. FastAPI's router names only its own routes (``APIRoute``)
    on the scope: a plain route (``/metrics``, ``/docs``) or a mount (the static files) is found again by its
    path. ``UNMATCHED`` when no router was reached (a refusal) or no route matched."""
    route = scope.get("route")
    if route is not None:
        return str(route.path)
    router = scope.get("router")
    if router is None:
        return UNMATCHED
    path = str(scope["path"])
    for candidate in router.routes:
        if isinstance(candidate, Mount) and path.startswith(candidate.path + "/"):
            return candidate.path
        if isinstance(candidate, Route) and candidate.path_regex.match(path):
            return candidate.path
    return UNMATCHED
