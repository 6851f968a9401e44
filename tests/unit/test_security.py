"""The guard's decisions on hand-made request scopes; the services' wiring is tested over real HTTP."""

from __future__ import annotations

import time

import pytest

from deskpilot.config import SecuritySettings
from deskpilot.security import Credentials, Guard, Policy, digest, host_name, policy_for
from deskpilot.ui.sessions import Sessions

TOKEN = "tok-0123456789abcdef"


def scope(
    method: str = "POST",
    path: str = "/computer-use",
    *,
    kind: str = "http",
    host: str = "127.0.0.1:9990",
    **headers: str,
) -> dict:
    raw = [(b"host", host.encode())] + [
        (k.replace("_", "-").encode(), v.encode()) for k, v in headers.items()
    ]
    return {"type": kind, "method": method, "path": path, "headers": raw}


def guard(**kw) -> Guard:
    return Guard(app=None, policy=Policy(**kw), refuse=None)  # type: ignore[arg-type]


def status(g: Guard, s: dict) -> int | None:
    v = g.verdict(s)
    return None if v is None else v[0]


@pytest.mark.parametrize(
    ("header", "name"), [("a.example:9990", "a.example"), ("[::1]:9990", "::1"), ("LOCALHOST", "localhost")]
)
def test_host_names(header: str, name: str) -> None:
    assert host_name(header) == name


def test_hosts_other_than_loopback_and_the_configured_ones_are_refused() -> None:
    g = guard(allowed_hosts=frozenset({"desk.example"}))
    ok = {"content_type": "application/json", "content_length": "2"}
    assert status(g, scope(host="localhost:9990", **ok)) is None
    assert status(g, scope(host="[::1]:9990", **ok)) is None
    assert status(g, scope(host="desk.example", **ok)) is None
    assert status(g, scope(host="attacker.example", **ok)) == 400
    assert status(g, scope(host="attacker.example", path="/health", **ok)) is None  # probes use pod IPs
    assert status(guard(allowed_hosts=frozenset({"*"})), scope(host="anything", **ok)) is None


def test_foreign_origins_may_read_but_not_change() -> None:
    g = guard(allowed_origins=frozenset({"https://dash.example"}))
    body = {"content_type": "application/json", "content_length": "2"}
    assert status(g, scope(origin="http://127.0.0.1:9990", **body)) is None  # same origin
    assert status(g, scope(origin="http://127.0.0.1:8000", **body)) == 403  # another port is another origin
    assert status(g, scope(origin="null", **body)) == 403
    assert status(g, scope(origin="https://dash.example", **body)) is None
    assert status(g, scope("GET", "/tasks", origin="http://evil.example")) is None
    assert status(g, scope("GET", "/ws", kind="websocket", origin="http://evil.example")) == 403
    assert status(g, scope("GET", "/ws", kind="websocket", origin="http://127.0.0.1:9990")) is None


def test_json_endpoints_refuse_other_bodies() -> None:
    g = guard(other_types={"/tasks": ("multipart/form-data",)})
    assert status(g, scope(content_type="text/plain", content_length="20")) == 415
    assert status(g, scope(content_length="20")) == 415  # a Blob without a type
    assert status(g, scope(content_type="application/json; charset=utf-8", content_length="2")) is None
    assert (
        status(g, scope(path="/tasks", content_type="multipart/form-data; boundary=x", content_length="9"))
        is None
    )
    assert (
        status(g, scope(path="/other", content_type="multipart/form-data; boundary=x", content_length="9"))
        == 415
    )
    assert status(g, scope("DELETE", "/tasks/1")) is None  # no body, nothing to declare


def test_a_token_is_checked_by_digest_and_the_session_cookie_only_where_allowed() -> None:
    body = {"content_type": "application/json", "content_length": "2"}
    g = guard(credentials=Credentials.from_token(TOKEN))
    assert status(g, scope(**body)) == 401
    assert status(g, scope(authorization=f"Bearer {TOKEN}", **body)) is None
    assert status(g, scope(authorization=f"bearer  {TOKEN} ", **body)) is None
    assert status(g, scope(authorization="Bearer wrong", **body)) == 401
    assert status(g, scope(authorization=f"Basic {TOKEN}", **body)) == 401
    session = Sessions(TOKEN, 3600).issue()
    assert status(g, scope(cookie=f"deskpilot_session={session}", **body)) == 401
    assert status(g, scope("GET", "/health")) is None
    issuer = Sessions(TOKEN, 3600)
    sessions = guard(credentials=Credentials.from_token(TOKEN, sessions=issuer))
    assert status(sessions, scope(cookie=f"a=b; deskpilot_session={issuer.issue()}", **body)) is None
    earlier = Sessions(TOKEN, 3600, clock=lambda: time.time() - 10).issue()  # before this process started
    assert status(sessions, scope(cookie=f"deskpilot_session={earlier}", **body)) == 401
    assert status(sessions, scope(cookie=f"deskpilot_session={TOKEN}", **body)) == 401
    only_digest = guard(credentials=Credentials(token_digests=frozenset({digest(TOKEN)})))
    assert status(only_digest, scope(authorization=f"Bearer {TOKEN}", **body)) is None
    v = g.verdict(scope(**body))
    assert v is not None and v[2]["WWW-Authenticate"].startswith("Bearer")


def test_the_policy_comes_from_the_environment_settings() -> None:
    p = policy_for("test", SecuritySettings(token=TOKEN, allowed_hosts=["Desk.Example:9990"]))
    assert p.credentials.accepts_bearer(TOKEN) and p.allowed_hosts == {"desk.example"}
    assert not policy_for("test", SecuritySettings(token=TOKEN, auth="off")).credentials.required
    by_digest = policy_for("test", SecuritySettings(token_sha256=digest(TOKEN).upper()))
    assert by_digest.credentials.accepts_bearer(TOKEN)
    assert not policy_for("test", SecuritySettings()).credentials.required


def test_the_old_mcp_variable_is_an_alias_of_the_allowed_hosts(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DESKTOP_MCP_ALLOWED_HOSTS", "desk.example, 10.0.0.5")
    assert SecuritySettings().allowed_hosts == ["desk.example", "10.0.0.5"]
    monkeypatch.setenv("DESKPILOT_ALLOWED_HOSTS", "other.example")
    assert SecuritySettings().allowed_hosts == ["other.example"]  # the new name wins


def test_the_mcp_sdk_checks_the_same_hosts_and_origins() -> None:
    from deskpilot.desktop.mcp import transport_security

    checks = transport_security(
        SecuritySettings(
            allowed_hosts=["desk.example", "10.0.0.5:9990"], allowed_origins=["https://dash.example/"]
        )
    )
    assert checks.enable_dns_rebinding_protection
    assert {"127.0.0.1:*", "desk.example", "desk.example:*", "10.0.0.5:9990"} <= set(checks.allowed_hosts)
    assert {"http://desk.example:*", "https://dash.example"} <= set(checks.allowed_origins)
    assert not transport_security(SecuritySettings(allowed_hosts=["*"])).enable_dns_rebinding_protection
