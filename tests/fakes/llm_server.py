"""A scripted OpenAI-compatible LLM on real HTTP: plays back a list of replies and records every request.

    llm = ScriptedLLM([
        tool("computer_application", application="terminal"),
        tool("computer_type_text", text="echo hi > ~/Desktop/hello.txt\\n"),
        tool("set_task_status", status="completed", description="done"),
    ])
    with llm.serve():                      # or llm.start() / llm.stop()
        ... point the agent at llm.base_url (".../v1") ...
    assert llm.requests[1].last_tool_result_has_image()

A step of the script is a `Step` (built with `tool`, `tools`, `text`, `fail`) or a callable taking the
`Request` and returning a Step, for replies that depend on what the agent sent; an exception in it
(a failed assert) is kept in `llm.errors` and answered with a 400, which fails the task at once with the
message in its `error`. When the script runs
out, `then` is played (default: a 500 error saying the script is exhausted, which the agent sees as a
transient failure and tests can spot through `llm.exhausted`).
"""

from __future__ import annotations

import contextlib
import itertools
import json
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from fastapi import FastAPI
from fastapi import Request as HTTPRequest
from fastapi.responses import JSONResponse

from tests.support.net import ServerThread


@dataclass
class Step:
    """One scripted reply: text and/or tool calls, or an HTTP error."""

    text: str | None = None
    calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    status: int = 200  # != 200: answer with this error status instead
    prompt_tokens: int = 100
    completion_tokens: int = 20


def tool(name: str, /, **arguments: Any) -> Step:
    """A reply calling one tool: ``tool("computer_click_mouse", coordinates={"x": 1, "y": 2}, ...)``."""
    return Step(calls=[(name, arguments)])


def tools(*calls: Step) -> Step:
    """A reply with several tool calls: ``tools(tool(...), tool(...))``."""
    return Step(calls=[c for s in calls for c in s.calls])


def text(content: str, **kw: Any) -> Step:
    """A plain answer with no tool call."""
    return Step(text=content, **kw)


def fail(status: int = 503) -> Step:
    """An HTTP error from the 'provider' (503/429 are transient for the agent, 400/401 are not)."""
    return Step(status=status)


@dataclass
class Request:
    """What the agent sent in one /chat/completions call."""

    body: dict[str, Any]
    headers: dict[str, str]

    @property
    def messages(self) -> list[dict[str, Any]]:
        return self.body.get("messages", [])

    @property
    def tool_names(self) -> list[str]:
        return [t["function"]["name"] for t in self.body.get("tools", [])]

    def tool_results(self) -> list[dict[str, Any]]:
        return [m for m in self.messages if m.get("role") == "tool"]

    def images(self) -> list[str]:
        """Every image URL (``data:image/png;base64,...``) anywhere in the conversation, in order."""
        out = []
        for m in self.messages:
            content = m.get("content")
            if isinstance(content, list):
                out += [p["image_url"]["url"] for p in content if p.get("type") == "image_url"]
        return out

    def text_of(self, role: str) -> list[str]:
        out = []
        for m in self.messages:
            if m.get("role") != role:
                continue
            content = m.get("content")
            if isinstance(content, str):
                out.append(content)
            elif isinstance(content, list):
                out += [p.get("text", "") for p in content if p.get("type") == "text"]
        return out

    def last_tool_result_has_image(self) -> bool:
        """The screenshot after the last tool call: an image in the messages after the last tool result."""
        idx = max((i for i, m in enumerate(self.messages) if m.get("role") == "tool"), default=None)
        if idx is None:
            return False
        for m in self.messages[idx:]:
            content = m.get("content")
            if isinstance(content, list) and any(p.get("type") == "image_url" for p in content):
                return True
        return False


Script = list[Step | Callable[[Request], Step]]


class ScriptedLLM:
    """The fake provider. Thread-safe: the server runs in its own thread, tests read from theirs."""

    def __init__(
        self, script: Script | None = None, then: Step | None = None, model: str = "scripted"
    ) -> None:
        self.model = model
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        self.requests: list[Request] = []
        self.play(script or [], then)
        self._server: ServerThread | None = None
        self.app = self._build_app()

    def play(self, script: Script, then: Step | None = None) -> None:
        """Replace the script (and forget earlier requests): lets one server serve many tests."""
        with self._lock:
            self._script = list(script)
            self._then = then
            self.requests = []
            self.errors: list[Exception] = []
            self.exhausted = False

    @property
    def url(self) -> str:
        assert self._server, "not started"
        return self._server.url

    @property
    def base_url(self) -> str:
        """What an OpenAI client wants as its base URL."""
        return f"{self.url}/v1"

    def start(self) -> ScriptedLLM:
        self._server = ServerThread(self.app).__enter__()
        return self

    def stop(self) -> None:
        if self._server:
            self._server.__exit__(None, None, None)
            self._server = None

    @contextlib.contextmanager
    def serve(self) -> Iterator[ScriptedLLM]:
        self.start()
        try:
            yield self
        finally:
            self.stop()

    def wait_requests(self, n: int, timeout: float = 30) -> list[Request]:
        deadline = time.monotonic() + timeout
        while len(self.requests) < n:
            if time.monotonic() > deadline:
                raise TimeoutError(f"expected {n} LLM requests, got {len(self.requests)}")
            time.sleep(0.02)
        return self.requests

    # ------------------------------------------------------------------------------------------- HTTP

    def _next(self, req: Request) -> Step:
        with self._lock:
            self.requests.append(req)
            if self._script:
                step = self._script.pop(0)
            elif self._then is not None:
                step = self._then
            else:
                self.exhausted = True
                step = Step(status=500, text="scripted LLM: script exhausted")
        if not callable(step):
            return step
        try:
            return step(req)
        except Exception as e:  # a failed check in the script: fail the task fast and visibly
            self.errors.append(e)
            return Step(status=400, text=f"scripted LLM: check failed: {e!r}")

    def _completion(self, step: Step, model: str) -> dict[str, Any]:
        message: dict[str, Any] = {"role": "assistant", "content": step.text}
        if step.calls:
            message["tool_calls"] = [
                {
                    "id": f"call_{next(self._ids)}",
                    "type": "function",
                    "function": {"name": name, "arguments": json.dumps(args)},
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

    def _build_app(self) -> FastAPI:
        app = FastAPI(title="scripted LLM")

        async def chat(request: HTTPRequest) -> JSONResponse:
            body = await request.json()
            step = self._next(Request(body=body, headers=dict(request.headers)))
            if step.status != 200:
                err = {
                    "message": step.text or f"scripted error {step.status}",
                    "type": "scripted",
                    "code": None,
                }
                return JSONResponse({"error": err}, status_code=step.status)
            return JSONResponse(self._completion(step, body.get("model", self.model)))

        async def models() -> dict[str, Any]:
            return {
                "object": "list",
                "data": [{"id": self.model, "object": "model", "created": 0, "owned_by": "tests"}],
            }

        for prefix in ("", "/v1"):
            app.add_api_route(f"{prefix}/chat/completions", chat, methods=["POST"])
            app.add_api_route(f"{prefix}/models", models, methods=["GET"])
        return app


def main() -> None:
    """``python -m tests.fakes.llm_server --port P --then '{"calls": [["computer_wait", {"duration": 1}]]}'``:
    a standalone scripted server answering every request with the same step (for benchmarks)."""
    import argparse

    import uvicorn

    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--then", required=True, help="a Step as JSON: text, calls, prompt_tokens ...")
    args = ap.parse_args()
    step = Step(**json.loads(args.then))
    step.calls = [(name, a) for name, a in step.calls]
    uvicorn.run(ScriptedLLM(then=step).app, host="127.0.0.1", port=args.port, log_level="warning")


if __name__ == "__main__":
    main()
