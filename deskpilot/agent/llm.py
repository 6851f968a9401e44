"""The one LLM client: LiteLLM for every provider, or a LiteLLM proxy when ``AGENT_LLM_PROXY_URL`` is set.

Which provider: with a proxy, all calls go to it (``litellm_proxy/<model_name>``, bearer
``AGENT_LLM_PROXY_KEY``) and the model list is the proxy's ``GET /model/info``. Without one, every provider
whose key is set is available and the first of ``deskpilot.config.PROVIDERS`` (in that order) is the
default, unless ``AGENT_MODEL`` names another. Model names are ours, ``<provider>/<model>``
(``anthropic/claude-sonnet-4-6``, ``local/qwen2.5vl``); ``route()`` turns one into LiteLLM arguments.

Conversation in and out is OpenAI chat format (LiteLLM translates for each provider); the reply comes
back as content blocks (``thinking``, ``text``, ``tool_use``), the shape the agent stores.
"""

from __future__ import annotations

import asyncio
import json
import logging
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

import httpx

from deskpilot import tracing
from deskpilot.agent.litellm_loader import litellm_module
from deskpilot.config import PROVIDERS, AgentSettings, Provider, no_model_message

log = logging.getLogger(__name__)

DEFAULT_CONTEXT_WINDOW = 128_000
# Told of each attempt at a call: (model, outcome, seconds, (prompt tokens, completion tokens)), outcome "ok",
# "transient" (retried, or the last of the retries) or "rejected"; the agent passes TaskContext.model_call.
CallObserver = Callable[[str, str, float, tuple[int, int]], None]


# ----------------------------------------------------------------------------------------------- errors


class LLMError(Exception):
    """An LLM call that did not produce an answer; ``message`` is meant for the task's ``error``."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class NoProvider(LLMError):
    """No proxy URL and no provider key: nothing to call."""

    outcome = "no_provider"  # of its span (deskpilot.tracing.model_call), as those below


class LLMUnavailable(LLMError):
    """Transient failures (rate limit, 5xx, connection, time-out) that outlasted every retry."""

    outcome = "unavailable"


class LLMRejected(LLMError):
    """The provider refused the request (bad key, unknown model, invalid request): retrying won't help."""

    outcome = "rejected"


# ---------------------------------------------------------------------------------------------- routing


@dataclass(frozen=True)
class Route:
    """Everything LiteLLM needs to reach one model."""

    name: str  # our name, as listed by models() and stored on tasks
    provider: str
    litellm_model: str
    api_base: str | None = None
    api_key: str | None = None

    def kwargs(self) -> dict[str, Any]:
        arguments: dict[str, Any] = {"model": self.litellm_model}
        if self.api_base:
            arguments["api_base"] = self.api_base
        if self.api_key:
            arguments["api_key"] = self.api_key
        return arguments


def _route_for(settings: AgentSettings, provider: Provider, model: str) -> Route:
    if provider.name == "local":
        return Route(
            name=f"local/{model}",
            provider="local",
            litellm_model=f"openai/{model}",
            api_base=settings.openai_base_url,
            api_key=settings.openai_base_key or "none",  # the OpenAI client insists on some key
        )
    return Route(
        name=f"{provider.name}/{model}",
        provider=provider.name,
        litellm_model=f"{provider.litellm_prefix}/{model}",
        api_key=settings.provider_key(provider),
    )


def route(settings: AgentSettings, model: str | None = None) -> Route:
    """The route for `model` (one of our names, or None for the default); NoProvider if nothing is set up."""
    if settings.llm_proxy_url:
        name = model or settings.model
        if not name:
            raise NoProvider(
                "AGENT_LLM_PROXY_URL is set but no model is chosen: set AGENT_MODEL to one of the "
                "proxy's model_name values (GET /tasks/models lists them), or name the model on the task."
            )
        return Route(
            name=name,
            provider="proxy",
            litellm_model=f"litellm_proxy/{name}",
            api_base=settings.llm_proxy_url.rstrip("/"),
            # the proxy answers 500 to a request with no Authorization header at all
            api_key=settings.llm_proxy_key or "no-key",
        )
    providers = settings.configured_providers()
    if not providers:
        raise NoProvider(no_model_message())
    name = model or settings.model
    if not name:
        first = providers[0]
        return _route_for(settings, first, settings.provider_model(first))
    prefix, _, rest = name.partition("/")
    for provider in providers:
        if prefix == provider.name and rest:
            return _route_for(settings, provider, rest)
    needed = next((p for p in PROVIDERS if p.name == prefix), None)
    if needed is not None and rest:
        raise NoProvider(
            f"Model {name!r} needs {needed.key_var} to be set in the task service's environment."
        )
    # a bare model name ("gpt-5.4") belongs to the default provider
    return _route_for(settings, providers[0], name)


# ---------------------------------------------------------------------------------------------- replies


@dataclass
class Usage:
    prompt_tokens: int = 0
    completion_tokens: int = 0

    @property
    def total(self) -> int:
        return self.prompt_tokens + self.completion_tokens


@dataclass
class Reply:
    """One assistant turn as content blocks: ``thinking``, ``text`` and ``tool_use`` (input is a dict)."""

    blocks: list[dict[str, Any]]
    usage: Usage = field(default_factory=Usage)
    model: str = ""

    @property
    def tool_uses(self) -> list[dict[str, Any]]:
        return [b for b in self.blocks if b["type"] == "tool_use"]

    @property
    def text(self) -> str:
        return "\n".join(b["text"] for b in self.blocks if b["type"] == "text").strip()


def parse_reply(response: Any, model: str = "") -> Reply:
    """A LiteLLM ModelResponse (OpenAI shape) → content blocks."""
    message = response.choices[0].message
    blocks: list[dict[str, Any]] = []
    thinking_blocks = getattr(message, "thinking_blocks", None) or []
    for tb in thinking_blocks:
        tb = dict(tb)
        if tb.get("type") == "thinking":
            blocks.append(
                {"type": "thinking", "thinking": tb.get("thinking", ""), "signature": tb.get("signature")}
            )
        elif tb.get("type") == "redacted_thinking":
            blocks.append({"type": "thinking", "thinking": "", "redacted": tb.get("data")})
    reasoning = getattr(message, "reasoning_content", None)
    if reasoning and not thinking_blocks:
        blocks.append({"type": "thinking", "thinking": reasoning})
    if message.content:
        blocks.append({"type": "text", "text": message.content})
    for call in message.tool_calls or []:
        raw = call.function.arguments or "{}"
        try:
            args = json.loads(raw)
            if not isinstance(args, dict):
                raise ValueError("arguments are not a JSON object")
        except ValueError:
            args = {"__invalid_json__": raw}
        blocks.append({"type": "tool_use", "id": call.id, "name": call.function.name, "input": args})
    usage = getattr(response, "usage", None)
    return Reply(
        blocks=blocks,
        usage=Usage(
            prompt_tokens=int(getattr(usage, "prompt_tokens", 0) or 0),
            completion_tokens=int(getattr(usage, "completion_tokens", 0) or 0),
        ),
        model=model,
    )


# ---------------------------------------------------------------------------------------------- calling


def _is_transient(litellm: ModuleType, exc: BaseException) -> bool:
    permanent = (
        litellm.AuthenticationError,
        litellm.PermissionDeniedError,
        litellm.NotFoundError,
        litellm.BadRequestError,
        litellm.UnprocessableEntityError,
    )
    transient = (
        litellm.RateLimitError,
        litellm.Timeout,
        litellm.APIConnectionError,
        litellm.ServiceUnavailableError,
        litellm.BadGatewayError,
        litellm.InternalServerError,
    )
    if isinstance(exc, permanent):
        return False
    if isinstance(exc, transient):
        return True
    status = getattr(exc, "status_code", None)
    return isinstance(status, int) and (status >= 500 or status == 429)


class LLM:
    """Routes, retries and lists models; one instance per task service."""

    def __init__(self, settings: AgentSettings) -> None:
        self.settings = settings
        self._proxy_models: dict[str, dict[str, Any]] = {}

    def route(self, model: str | None = None) -> Route:
        return route(self.settings, model)

    def configured(self) -> bool:
        """A model can be called: a proxy or at least one provider is set up."""
        return bool(self.settings.llm_proxy_url or self.settings.configured_providers())

    async def complete(
        self,
        messages: Sequence[dict[str, Any]],
        tools: Sequence[dict[str, Any]] | None = None,
        model: str | None = None,
        observe: CallObserver | None = None,
    ) -> Reply:
        """``_complete`` in its span, ``model.call``: the model, the tokens, the outcome, the latency."""
        with tracing.model_call(self.route(model).name) as call:
            reply = await self._complete(messages, tools, model, observe)
            call.replied(reply.usage.prompt_tokens, reply.usage.completion_tokens)
            return reply

    async def _complete(
        self,
        messages: Sequence[dict[str, Any]],
        tools: Sequence[dict[str, Any]] | None,
        model: str | None,
        observe: CallObserver | None,
    ) -> Reply:
        """One chat completion, retried with exponential back-off on transient errors; ``observe`` is told
        of each attempt (the service's metrics)."""
        route = self.route(model)
        settings = self.settings
        kwargs: dict[str, Any] = {
            **route.kwargs(),
            "messages": list(messages),
            "timeout": settings.llm_timeout,
            "max_tokens": settings.max_output_tokens,
            "num_retries": 0,  # ours below, so the task sees one policy whatever the provider
        }
        if tools:
            kwargs["tools"] = list(tools)
        litellm = await litellm_module()
        attempts = settings.llm_retries + 1
        for attempt in range(attempts):
            started = time.monotonic()
            try:
                response = await litellm.acompletion(**kwargs)
                reply = parse_reply(response, route.name)
            except Exception as exc:
                transient = _is_transient(litellm, exc)
                _tell(observe, route.name, "transient" if transient else "rejected", started)
                if not transient:
                    raise LLMRejected(f"{route.name}: {_short(exc)}") from exc
                if attempt == attempts - 1:
                    raise LLMUnavailable(
                        f"{route.name} failed {attempts} times, last error: {_short(exc)}"
                    ) from exc
                delay = min(30.0, settings.llm_backoff * 2**attempt) * (0.5 + random.random() / 2)
                log.warning(
                    "LLM call failed; retrying",
                    extra={"model": route.name, "error": _short(exc), "retry": attempt + 1, "delay_s": delay},
                )
                await asyncio.sleep(delay)
            else:
                _tell(observe, route.name, "ok", started, reply.usage)
                return reply
        raise AssertionError("unreachable")

    # -------------------------------------------------------------------------------------- model list

    async def models(self) -> list[dict[str, Any]]:
        """``[{provider, name, title, contextWindow}]``: the proxy's models, or the configured providers'."""
        settings = self.settings
        if settings.llm_proxy_url:
            return await self._proxy_model_list()
        out: list[dict[str, Any]] = []
        names: list[str] = []
        try:
            default = self.route(None).name
            names.append(default)
        except NoProvider:
            return []
        for provider in settings.configured_providers():
            names.append(_route_for(settings, provider, settings.provider_model(provider)).name)
        litellm = await litellm_module()
        for name in dict.fromkeys(names):
            route = self.route(name)
            out.append(
                {
                    "provider": route.provider,
                    "name": route.name,
                    "title": route.name.split("/", 1)[1],
                    "contextWindow": _litellm_context_window(litellm, route),
                }
            )
        return out

    async def _proxy_model_list(self) -> list[dict[str, Any]]:
        settings = self.settings
        assert settings.llm_proxy_url
        headers = {"Authorization": f"Bearer {settings.llm_proxy_key}"} if settings.llm_proxy_key else {}
        async with httpx.AsyncClient(timeout=10) as client:
            resp = await client.get(f"{settings.llm_proxy_url.rstrip('/')}/model/info", headers=headers)
            resp.raise_for_status()
        out = []
        for item in resp.json().get("data", []):
            name = item.get("model_name")
            if not name:
                continue
            info = item.get("model_info") or {}
            window = info.get("max_input_tokens") or info.get("max_tokens") or DEFAULT_CONTEXT_WINDOW
            self._proxy_models[name] = info
            out.append({"provider": "proxy", "name": name, "title": name, "contextWindow": int(window)})
        return list({m["name"]: m for m in out}.values())

    async def context_window(self, model: str | None = None) -> int:
        """Input tokens the model takes: AGENT_CONTEXT_WINDOW, else the proxy's or LiteLLM's figure."""
        if self.settings.context_window:
            return self.settings.context_window
        route = self.route(model)
        if route.provider == "proxy":
            if route.name not in self._proxy_models:
                try:
                    await self._proxy_model_list()
                except httpx.HTTPError:
                    return DEFAULT_CONTEXT_WINDOW
            info = self._proxy_models.get(route.name) or {}
            return int(info.get("max_input_tokens") or info.get("max_tokens") or DEFAULT_CONTEXT_WINDOW)
        return _litellm_context_window(await litellm_module(), route)


def _litellm_context_window(litellm: ModuleType, route: Route) -> int:
    try:
        info = litellm.get_model_info(route.litellm_model)
    except Exception:
        return DEFAULT_CONTEXT_WINDOW
    return int(info.get("max_input_tokens") or info.get("max_tokens") or DEFAULT_CONTEXT_WINDOW)


def _tell(
    observe: CallObserver | None, model: str, outcome: str, started: float, usage: Usage | None = None
) -> None:
    if observe is not None:
        tokens = (usage.prompt_tokens, usage.completion_tokens) if usage is not None else (0, 0)
        observe(model, outcome, time.monotonic() - started, tokens)


def _short(exc: BaseException) -> str:
    text = str(getattr(exc, "message", None) or exc).strip().splitlines()
    first = text[0] if text else type(exc).__name__
    return f"{type(exc).__name__}: {first[:300]}"
