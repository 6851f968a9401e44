"""One log format for every service, with secrets masked wherever they would appear."""

from __future__ import annotations

import json
import logging

from deskpilot.logs import DeniedHandshakeFilter, Formatter, configure, secret_values


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
