"""No response of a service may be framed (``deny_framing``), and a probe learns whether it was authorized."""

from __future__ import annotations

import asyncio

import httpx
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Route

from deskpilot.security import Credentials, Guard, Policy, authorized, deny_framing, refuse_framing

TOKEN = "tok-0123456789abcdef"
DENY = (b"x-frame-options", b"DENY")
NONE = (b"content-security-policy", b"frame-ancestors 'none'")


def test_headers_without_a_policy_get_both() -> None:
    assert refuse_framing([(b"content-type", b"text/html")]) == [(b"content-type", b"text/html"), NONE, DENY]


def test_a_policy_of_the_responses_own_keeps_its_directives_and_loses_its_frame_ancestors() -> None:
    own = [
        (b"Content-Security-Policy", b"default-src 'self'; frame-ancestors https://a.example ;img-src data:"),
        (b"X-Frame-Options", b"SAMEORIGIN"),
        (b"content-security-policy", b"frame-ancestors *"),  # a second policy: only its frame-ancestors
        (b"content-security-policy", b"script-src 'self'"),
    ]
    assert refuse_framing(own) == [
        (b"Content-Security-Policy", b"default-src 'self'; img-src data:; frame-ancestors 'none'"),
        (b"content-security-policy", b"script-src 'self'"),
        DENY,
    ]


def test_frame_headers_are_not_repeated() -> None:
    assert refuse_framing(refuse_framing([])) == [NONE, DENY]


async def crash(request: Request) -> Response:
    raise RuntimeError("a bug")


async def own_policy(request: Request) -> Response:
    return PlainTextResponse("x", headers={"Content-Security-Policy": "default-src 'none'"})


async def probe(request: Request) -> Response:
    return JSONResponse({"authorized": authorized(request.scope)})


def app(token: str | None = None) -> Starlette:
    policy = Policy(credentials=Credentials.from_token(token))

    def refusal(status: int, message: str, headers: dict[str, str]) -> Response:
        return PlainTextResponse(message, status, headers)

    routes = [Route("/crash", crash), Route("/own", own_policy), Route("/health", probe), Route("/x", probe)]
    served = Starlette(routes=routes)
    served.add_middleware(Guard, policy=policy, refuse=refusal)
    deny_framing(served)
    return served


def get(served: Starlette, path: str, **headers: str) -> httpx.Response:
    async def go() -> httpx.Response:
        transport = httpx.ASGITransport(app=served, raise_app_exceptions=False)
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1:9990") as client:
            return await client.get(path, headers=headers)

    return asyncio.run(go())


@pytest.mark.parametrize("path", ["/crash", "/own", "/health", "/x", "/nope"])
def test_every_answer_refuses_framing_an_unhandled_exceptions_500_and_the_guards_refusals_too(
    path: str,
) -> None:
    for served, headers in ((app(), {}), (app(TOKEN), {}), (app(), {"Host": "attacker.example"})):
        r = get(served, path, **headers)
        assert r.headers.get_list("x-frame-options") == ["DENY"], (path, r.status_code)
        own = path == "/own" and r.status_code == 200
        expected = ("default-src 'none'; " if own else "") + "frame-ancestors 'none'"
        assert r.headers.get_list("content-security-policy") == [expected], (path, r.status_code)
    assert get(app(), "/crash").status_code == 500


def test_a_probe_learns_whether_it_would_have_passed() -> None:
    guarded = app(TOKEN)
    assert get(guarded, "/health").json() == {"authorized": False}
    assert get(guarded, "/health", authorization="Bearer wrong").json() == {"authorized": False}
    assert get(guarded, "/health", authorization=f"Bearer {TOKEN}").json() == {"authorized": True}
    bearer_elsewhere = {"authorization": f"Bearer {TOKEN}", "host": "10.1.2.3:9990"}
    assert get(guarded, "/health", **bearer_elsewhere).json() == {"authorized": False}  # a foreign Host
    assert get(guarded, "/x", authorization=f"Bearer {TOKEN}").json() == {"authorized": True}
    assert get(app(), "/health").json() == {"authorized": True}  # no token: loopback is enough
    assert get(app(), "/health", host="attacker.example").json() == {"authorized": False}
