"""One log format for every service, with secrets masked wherever they would appear."""

from __future__ import annotations

import io
import json
import logging

from uvicorn.logging import AccessFormatter

from deskpilot.logs import (
    URL_LOGGERS,
    DeniedHandshakeFilter,
    Formatter,
    QueryRedaction,
    configure,
    redact_query,
    secret_values,
)


def record(msg: str, *args: object, **extra: object) -> logging.LogRecord:
    r = logging.LogRecord("deskpilot.test", logging.INFO, __file__, 1, msg, args, None)
    for k, v in extra.items():
        setattr(r, k, v)
    return r


def test_a_line_is_time_level_logger_message_and_fields() -> None:
    line = Formatter(secrets=[]).format(record("action", action="click_mouse", ms=0.4123, outcome="ok"))
    when, level, logger, rest = line.split(" ", 3)
    assert when.endswith("Z") and level == "INFO" and logger == "deskpilot.test"
    assert rest == "action action=click_mouse ms=0.412 outcome=ok"
    assert 'error="no such file"' in Formatter(secrets=[]).format(record("x", error="no such file"))


def test_json_lines_carry_the_same_fields() -> None:
    body = json.loads(Formatter(json_lines=True, secrets=[]).format(record("task %s", "t1", task="t1")))
    assert body["message"] == "task t1" and body["task"] == "t1" and body["level"] == "INFO"


def test_secret_values_from_the_environment_never_reach_a_line() -> None:
    env = {
        "ANTHROPIC_API_KEY": "sk-ant-0123456789",
        "DESKPILOT_TOKEN": "tok-abcdefgh",
        "DATABASE_URL": "postgresql://agent:s3cret-pw@db/agent",
        "AGENT_LLM_PROXY_KEY": "sk-proxy-777777",
        "HOME": "/home/user",
        "SHORT_KEY": "abc",
    }
    secrets = secret_values(env)
    assert set(secrets) == {"sk-ant-0123456789", "tok-abcdefgh", "s3cret-pw", "sk-proxy-777777"}
    f = Formatter(secrets=secrets)
    line = f.format(
        record("calling with %s and %s", env["ANTHROPIC_API_KEY"], env["DATABASE_URL"], t="tok-abcdefgh")
    )
    assert "sk-ant" not in line and "s3cret" not in line and "tok-abcdefgh" not in line and "***" in line


def test_what_libraries_hang_on_records_is_not_a_field() -> None:
    line = Formatter(secrets=[]).format(
        record("GET /", color_message="\x1b[1mGET /", litellm_redacted=object())
    )
    assert line.endswith("GET /")


def test_uvicorns_error_after_a_refused_websocket_is_dropped_and_nothing_else() -> None:
    configure()
    uvicorn_errors = logging.getLogger("uvicorn.error")
    configure()  # idempotent: one filter
    denied = [f for f in uvicorn_errors.filters if isinstance(f, DeniedHandshakeFilter)]
    assert len(denied) == 1
    assert not denied[0].filter(record("ASGI callable returned without completing handshake."))
    assert denied[0].filter(record("Exception in ASGI application"))


# ------------------------------------------------------------------------------------- credentials in URLs


def test_a_credential_in_a_query_string_is_masked_and_the_rest_of_the_query_kept() -> None:
    assert redact_query('"GET /health?token=abc123 HTTP/1.1" 200') == '"GET /health?token=*** HTTP/1.1" 200'
    assert redact_query("/x?a=1&api_key=zz&b=2#f") == "/x?a=1&api_key=***&b=2#f"
    assert redact_query("/ws?%74oken=q&Access_Token=r") == "/ws?%74oken=***&Access_Token=***"
    assert redact_query("/vnc?interactive=1&view_only=true") == "/vnc?interactive=1&view_only=true"
    assert redact_query(r'{"message": "GET /x?token=a\"b"}') == r'{"message": "GET /x?token=***\"b"}'


def test_uvicorns_access_and_websocket_lines_lose_the_token_whatever_their_handler() -> None:
    """uvicorn's own formatter on a handler of its own (a --log-config, or uvicorn's default set up after
    ours): the filter on the logger rewrites the record before any handler sees it. (A logger of the test's
    own: LiteLLM, once imported, adds a redaction of its own to uvicorn's access logger.)"""
    configure()
    for name in URL_LOGGERS:
        assert sum(isinstance(f, QueryRedaction) for f in logging.getLogger(name).filters) == 1, name
    stream = io.StringIO()
    for name, formatter in [
        ("access", AccessFormatter('%(client_addr)s - "%(request_line)s" %(status_code)s')),
        ("error", logging.Formatter("%(message)s")),  # uvicorn writes WebSocket lines to its error logger
    ]:
        handler = logging.StreamHandler(stream)
        handler.setFormatter(formatter)
        log = logging.getLogger(f"deskpilot.test.{name}")
        log.propagate = False
        log.addFilter(QueryRedaction())
        log.addHandler(handler)
    access, errors = logging.getLogger("deskpilot.test.access"), logging.getLogger("deskpilot.test.error")
    access.info('%s - "%s %s HTTP/%s" %d', "127.0.0.1:5", "GET", "/docs?token=tok-secret-1", "1.1", 401)
    errors.info('%s - "WebSocket %s" %d', "127.0.0.1:5", "/ws?x=1&api_key=tok-secret-2", 401)
    assert stream.getvalue().splitlines() == [
        '127.0.0.1:5 - "GET /docs?token=*** HTTP/1.1" 401 Unauthorized',
        '127.0.0.1:5 - "WebSocket /ws?x=1&api_key=***" 401',
    ]
    line = Formatter(secrets=[]).format(record("ws %s", "/ws?token=tok-secret-3"))
    assert line.endswith("ws /ws?token=***")


def test_uvicorns_no_access_log_stays_in_force() -> None:
    access = logging.getLogger("uvicorn.access")
    saved = access.handlers[:], access.propagate
    try:
        access.handlers, access.propagate = [], False  # what uvicorn --no-access-log leaves
        configure()
        assert not access.hasHandlers()
        access.propagate = True  # uvicorn with access lines and no config of its own: ours
        configure()
        assert access.hasHandlers()
    finally:
        access.handlers, access.propagate = saved
