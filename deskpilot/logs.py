"""One logging configuration for every service: one line per event, fields as ``key=value``, no secrets.

    2026-11-23T20:41:07.120Z INFO deskpilot.desktop action=click_mouse ms=0.41 outcome=ok

A service calls ``configure()`` when its app is created; uvicorn's own loggers (errors, access) are routed
through the same handler. Fields come from ``extra={...}``. ``DESKPILOT_LOG_FORMAT=json`` writes one JSON
object per line instead; ``DESKPILOT_LOG_LEVEL`` sets the level (default INFO). Every value of an
environment variable that names a secret (``*_KEY``, ``*_TOKEN``, ``*_SECRET``, ``*PASSWORD*``, and the
password in ``DATABASE_URL``, the values of ``OTEL_EXPORTER_OTLP_HEADERS``) is replaced by ``***`` wherever it
would appear in a line.

A line about a task carries its id (``task=``): a record emitted while the worker runs a task (inside
``about_task``) gets it when its ``extra`` does not name one. A record emitted inside a span, when traces are
on (``deskpilot.tracing``), carries ``trace_id`` and ``span_id``.

A credential sent in a URL (``?token=...``, ``?api_key=...``: any query parameter whose name says token, key,
secret, password, auth, session, signature or credential) is replaced by ``***`` too, whatever its value:
in every line of this format, and, by a filter on uvicorn's own loggers (access lines, WebSocket lines) and
httpx's, in every record of theirs whatever handlers a logging setup gives them. uvicorn's
``--no-access-log`` stays in force.
"""

from __future__ import annotations

import logging
import os
import re
import sys
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any
from urllib.parse import unquote, unquote_plus

import orjson

from deskpilot import tracing

# Attributes every LogRecord has; anything else on a record came from ``extra`` and is a field.
_STANDARD = set(vars(logging.LogRecord("", 0, "", 0, "", (), None))) | {"message", "asctime", "taskName"}
# What libraries hang on records for their own handlers: uvicorn's coloured copy of the message, LiteLLM's
# redaction marker.
_FOREIGN = {"color_message", "litellm_redacted"}
_SECRET_NAME = re.compile(r"(_KEY|_TOKEN|_SECRET|PASSWORD)$|^DESKPILOT_TOKEN$", re.IGNORECASE)
_URL_PASSWORD = re.compile(r"://[^:/@]+:([^@]+)@")
_BARE = re.compile(r"^[\w.:/@+-]+$")
# A query parameter (after ``?`` or ``&``) and its value, up to what ends a URL in a line (space, quote,
# ``#``; a backslash: a JSON line's escape); the name of one that holds a credential.
_QUERY_PARAM = re.compile(r"(?<=[?&])([^=&#\s\"\\]+)=([^&#\s\"\\]*)")
_SECRET_PARAM = re.compile(r"token|key|secret|passw|pwd|auth|session|sig|credential|jwt", re.IGNORECASE)
# uvicorn's access lines and its WebSocket lines (on its error logger), httpx's request lines: URLs.
URL_LOGGERS = ("uvicorn.access", "uvicorn.error", "httpx")
# OpenTelemetry's exporter headers (a tracing backend's credential): ``name=value,name=value``
_OTLP_HEADERS = ("OTEL_EXPORTER_OTLP_HEADERS", "OTEL_EXPORTER_OTLP_TRACES_HEADERS")
IDS = ("trace_id", "span_id")  # a span's, on each line emitted in it (deskpilot.tracing.current_ids)
# The task a record is about, when its ``extra`` does not say (``about_task``).
_TASK: ContextVar[str | None] = ContextVar("deskpilot_log_task", default=None)


@contextmanager
def about_task(task_id: str) -> Iterator[None]:
    """Every record emitted inside (and in the asyncio tasks started inside) is about ``task_id``."""
    token = _TASK.set(task_id)
    try:
        yield
    finally:
        _TASK.reset(token)


def secret_values(environ: dict[str, str] | None = None) -> list[str]:
    """The secret values in the environment, longest first (so a secret containing another is hidden
    whole). Values shorter than 6 characters are left alone: they would mask ordinary words."""
    env = os.environ if environ is None else environ
    found = {v for k, v in env.items() if _SECRET_NAME.search(k) and len(v) >= 6}
    for k in ("DATABASE_URL", "TASKS_DATABASE_URL"):
        if m := _URL_PASSWORD.search(env.get(k, "")):
            found.add(m.group(1))
    for k in _OTLP_HEADERS:
        raw = env.get(k, "")
        values = [unquote(pair.partition("=")[2]).strip() for pair in raw.split(",")] if raw else []
        # a value whole (``Bearer abc...``) and its last word (``abc...``), as either may reach a line
        found.update(v for v in (raw, *values, *(v.split()[-1] for v in values if v)) if len(v) >= 6)
    return sorted(found, key=len, reverse=True)


def _redact_param(match: re.Match[str]) -> str:
    name = match.group(1)
    return f"{name}=***" if match.group(2) and _SECRET_PARAM.search(unquote_plus(name)) else match.group(0)


def redact_query(text: str) -> str:
    """``text`` with the value of every query parameter whose name says it holds a credential as ``***``."""
    # a parameter follows "?" or "&": most lines (fields are key=value) have neither, and skip the regex
    return _QUERY_PARAM.sub(_redact_param, text) if "=" in text and ("?" in text or "&" in text) else text


def _redacted(value: Any) -> Any:
    return redact_query(value) if isinstance(value, str) else value


class QueryRedaction(logging.Filter):
    """Rewrites a record's message and arguments with ``redact_query`` before any handler sees it: on a
    logger, it holds whatever handlers a logging setup attaches (uvicorn's own, a ``--log-config``'s)."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.msg = _redacted(record.msg)
        if isinstance(record.args, tuple):
            record.args = tuple(_redacted(a) for a in record.args)
        elif isinstance(record.args, Mapping):
            record.args = {k: _redacted(v) for k, v in record.args.items()}
        return True


def _value(v: Any) -> str:
    if isinstance(v, float):
        return f"{v:.3g}" if abs(v) < 1000 else f"{v:.0f}"
    s = str(v)
    return s if s and _BARE.match(s) else orjson.dumps(s).decode()


class Formatter(logging.Formatter):
    def __init__(self, json_lines: bool = False, secrets: list[str] | None = None) -> None:
        super().__init__()
        self.json_lines = json_lines
        self.secrets = secrets if secrets is not None else secret_values()

    def _when(self, record: logging.LogRecord) -> str:
        ms = int(record.msecs)
        return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created)) + f".{ms:03d}Z"

    def format(self, record: logging.LogRecord) -> str:
        fields = {
            k: v
            for k, v in vars(record).items()
            if k not in _STANDARD and k not in _FOREIGN and not k.startswith("_")
        }
        if "task" not in fields and (task := _TASK.get()) is not None:
            fields["task"] = task
        ids = tracing.current_ids()
        if ids is not None and ("trace_id" in fields or "span_id" in fields):  # a record's own field wins
            fields |= {k: v for k, v in zip(IDS, ids, strict=True) if k not in fields}
            ids = None
        message = record.getMessage()
        if record.exc_info:
            message += "\n" + self.formatException(record.exc_info)
        if self.json_lines:
            body = {"time": self._when(record), "level": record.levelname, "logger": record.name}
            span = dict(zip(IDS, ids, strict=True)) if ids else {}
            line = orjson.dumps({**body, "message": message, **fields, **span}, default=str).decode()
        else:
            parts = [self._when(record), record.levelname, record.name, message]
            parts += [f"{k}={_value(v)}" for k, v in fields.items()]
            line = " ".join(p for p in parts if p)
        for secret in self.secrets:
            line = line.replace(secret, "***")
        line = redact_query(line)
        # hex the span made (a caller's traceparent is checked to be one): nothing to mask, after the rest
        return line if ids is None or self.json_lines else f"{line} trace_id={ids[0]} span_id={ids[1]}"


class DeniedHandshakeFilter(logging.Filter):
    """Drops the ERROR uvicorn's websockets-sansio protocol logs after every WebSocket Denial Response (each
    WebSocket the Guard refuses), although the refusal reached the client as sent: the protocol never marks
    that handshake complete (https://github.com/Kludex/uvicorn/pull/3138, open as of uvicorn 0.54)."""

    def filter(self, record: logging.LogRecord) -> bool:
        return record.getMessage() != "ASGI callable returned without completing handshake."


def configure(level: str | None = None) -> None:
    """Route every logger (ours and uvicorn's) to one stderr handler with ``Formatter``. Idempotent."""
    root = logging.getLogger()
    handler = next((h for h in root.handlers if isinstance(h.formatter, Formatter)), None)
    if handler is None:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(Formatter(os.environ.get("DESKPILOT_LOG_FORMAT", "").lower() == "json"))
        root.addHandler(handler)
    root.setLevel((level or os.environ.get("DESKPILOT_LOG_LEVEL") or "INFO").upper())
    access = logging.getLogger("uvicorn.access")
    silenced = not access.handlers and not access.propagate  # what uvicorn's --no-access-log leaves
    for name in ("uvicorn", "uvicorn.error", "uvicorn.access"):
        log = logging.getLogger(name)
        log.handlers.clear()
        log.propagate = True
    access.propagate = not silenced
    for name in URL_LOGGERS:
        log = logging.getLogger(name)
        if not any(isinstance(f, QueryRedaction) for f in log.filters):
            log.addFilter(QueryRedaction())
    uvicorn_errors = logging.getLogger("uvicorn.error")
    if not any(isinstance(f, DeniedHandshakeFilter) for f in uvicorn_errors.filters):
        uvicorn_errors.addFilter(DeniedHandshakeFilter())
    # chatty libraries: their INFO lines are per request, not events of ours
    for name in ("httpx", "httpcore", "LiteLLM", "litellm", "mcp", "sse_starlette"):
        logging.getLogger(name).setLevel(logging.WARNING)
