"""The scripted model: an OpenAI-compatible ``/v1/chat/completions`` on real HTTP that answers from a plan
(``plan.py``) or from a list of steps played in order, and records every request.

    with ScriptedModel(plan=Plan.load("plan.yaml")).serve() as model:
        ... AGENT_OPENAI_BASE_URL=model.base_url, AGENT_MODEL=local/scripted ...

    model = ScriptedModel([tool("computer_application", application="terminal"), text("done?")])

A list's item may be a callable taking the ``Request`` and returning a ``Answer``, for replies that depend on
what the agent sent; an exception in it (a failed assert) is kept in ``errors`` and answered with a 400, which
fails the task at once with the message. When the list runs out ``then`` is played, or else a 500 saying so
(the agent sees a transient failure; ``exhausted`` tells a test). The standard library serves it: the model
runs where only the client is installed.
"""

from __future__ import annotations

import contextlib
import itertools
import threading
import time
from collections.abc import Callable, Iterator
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import orjson

from deskpilot.scripted.plan import Plan
from deskpilot.scripted.steps import Answer, Request

Script = list[Answer | Callable[[Request], Answer]]
COMPLETIONS = ("/chat/completions", "/v1/chat/completions")
MODELS = ("/models", "/v1/models")


class ScriptedModel:
    """The fake provider. Thread-safe: the server runs in its own threads, tests read from theirs."""

    def __init__(
        self,
        script: Script | None = None,
        then: Answer | None = None,
        *,
        plan: Plan | None = None,
        model: str | None = None,
        latency: float = 0.0,
    ) -> None:
        self.model = model or (plan.model if plan else "scripted")
        # seconds each completion takes, as a provider's would: benches of many desktops measure the
        # fleet, not how fast this machine's CPUs answer an instant model
        self.latency = latency
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self.play(script or [], then, plan=plan)

    def play(self, script: Script, then: Answer | None = None, *, plan: Plan | None = None) -> None:
        """Replace the script or the plan (and forget earlier requests): one server serves many tests."""
        with self._lock:
            self.plan = plan
            self._script = list(script)
            self._then = then
            self.requests: list[Request] = []
            self.errors: list[Exception] = []
            self.exhausted = False

    # ------------------------------------------------------------------------------------------ serving

    @property
    def url(self) -> str:
        assert self._server, "not started"
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    @property
    def base_url(self) -> str:
        """What an OpenAI client (``AGENT_OPENAI_BASE_URL``) wants as its base URL."""
        return f"{self.url}/v1"

    def start(self, host: str = "127.0.0.1", port: int = 0) -> ScriptedModel:
        """Listen on ``host:port`` (0: a free port) in a thread of its own."""
        self._server = ThreadingHTTPServer((host, port), _handler(self))
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, name="scripted-model", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def serve_forever(self, host: str, port: int) -> None:
        """Serve in this thread until interrupted (``python -m deskpilot.scripted``)."""
        self._server = ThreadingHTTPServer((host, port), _handler(self))
        self._server.daemon_threads = True
        try:
            self._server.serve_forever()
        finally:
            self._server.server_close()

    @contextlib.contextmanager
    def serve(self) -> Iterator[ScriptedModel]:
        self.start()
        try:
            yield self
        finally:
            self.stop()

    def wait_requests(self, n: int, timeout: float = 30) -> list[Request]:
        deadline = time.monotonic() + timeout
        while len(self.requests) < n:
            if time.monotonic() > deadline:
                raise TimeoutError(f"expected {n} requests of the model, got {len(self.requests)}")
            time.sleep(0.02)
        return self.requests

    # ------------------------------------------------------------------------------------------ replies

    def next_step(self, request: Request) -> Answer:
        with self._lock:
            self.requests.append(request)
            if self.plan is not None:
                return self.plan.answer(request)
            if self._script:
                step = self._script.pop(0)
            elif self._then is not None:
                step = self._then
            else:
                self.exhausted = True
                step = Answer(status=500, text="scripted model: script exhausted")
        if not callable(step):
            return step
        try:
            return step(request)
        except Exception as exc:  # a failed check in the script: fail the task fast and visibly
            self.errors.append(exc)
            return Answer(status=400, text=f"scripted model: check failed: {exc!r}")

    def completion(self, step: Answer, model: str) -> dict[str, Any]:
        """The OpenAI ``chat.completion`` of a step."""
        message: dict[str, Any] = {"role": "assistant", "content": step.text}
        if step.calls:
            message["tool_calls"] = [
                {
                    "id": f"call_{next(self._ids)}",
                    "type": "function",
                    "function": {"name": name, "arguments": orjson.dumps(args).decode()},
                }
                for name, args in step.calls
            ]
        return {
            "id": f"chatcmpl-{next(self._ids)}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": model,
            "choices": [
                {"index": 0, "message": message, "finish_reason": "tool_calls" if step.calls else "stop"}
            ],
            "usage": {
                "prompt_tokens": step.prompt_tokens,
                "completion_tokens": step.completion_tokens,
                "total_tokens": step.prompt_tokens + step.completion_tokens,
            },
        }

    def answer(self, path: str, body: bytes | None, headers: dict[str, str]) -> tuple[int, dict[str, Any]]:
        """(status, JSON body) of one HTTP request."""
        if body is None:
            if path in MODELS:
                card = {"id": self.model, "object": "model", "created": 0, "owned_by": "deskpilot"}
                return 200, {"object": "list", "data": [card]}
            return 404, _error(f"no GET {path} here: GET /v1/models, POST /v1/chat/completions", 404)
        if path not in COMPLETIONS:
            return 404, _error(f"no POST {path} here: POST /v1/chat/completions", 404)
        try:
            data = orjson.loads(body)
        except orjson.JSONDecodeError:
            return 400, _error("the request body is not JSON", 400)
        if not isinstance(data, dict):
            return 400, _error("the request body is not a JSON object", 400)
        step = self.next_step(Request(body=data, headers=headers))
        if step.status != 200:
            return step.status, _error(step.text or f"scripted error {step.status}", step.status)
        return 200, self.completion(step, str(data.get("model") or self.model))


def _error(message: str, status: int) -> dict[str, Any]:
    return {"error": {"message": message, "type": "scripted", "code": status}}


def _handler(model: ScriptedModel) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self) -> None:
            self._reply(*model.answer(self._path(), None, dict(self.headers)))

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length > 0 else b""
            answer = model.answer(self._path(), body, dict(self.headers))
            if model.latency > 0:
                time.sleep(model.latency)  # this request's own thread
            self._reply(*answer)

        def _path(self) -> str:
            return self.path.split("?", 1)[0].rstrip("/") or "/"

        def _reply(self, status: int, body: dict[str, Any]) -> None:
            data = orjson.dumps(body)
            self.send_response(HTTPStatus(status))
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: Any) -> None:
            pass  # one line per request would drown a test's output

    return Handler
