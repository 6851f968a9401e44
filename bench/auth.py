"""What the Guard (token, Origin, Host and content-type checks, deskpilot/security.py) adds to a request.

    .venv/bin/python bench/auth.py [--rounds 30] [--n 100]

Each service runs three times side by side, as in production (its own uvicorn process, one worker):
without the Guard (the baseline: the app as it was before it), with ``DESKPILOT_AUTH=off`` (the Host, Origin
and content-type checks only) and with the token (every check). Every variant gets the same requests,
with ``Authorization: Bearer``, the service's own ``Origin`` and ``Content-Type: application/json``:

  POST /computer-use {"action": "cursor_position"} on the desktop service (given the token's digest)
  GET /tasks on the task service (SQLite, no worker)

Rounds of ``--n`` requests per variant are interleaved (in a new random order each round) so that load
from elsewhere falls on every variant alike. Target: the token's p50 at most 0.1 ms above the baseline's.
It also times ``Guard.verdict`` alone, in this process. Not a test: figures vary with load.

Then the channel the task service and the UI open the desktop with: the desktop credential (the desktop
service given two digests, the token's and the credential's; docs/security.md) against the token with one
digest as before, on a click and a screenshot. Target: at most 0.2 ms added at p50.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import httpx  # noqa: E402
from fastapi import FastAPI  # noqa: E402

from bench.served import CLICK, SCREENSHOT, TOKEN, Served, interleave  # noqa: E402
from deskpilot.desktop.api import create_app as desktop_app  # noqa: E402
from deskpilot.security import Guard, digest, policy_for  # noqa: E402
from deskpilot.tasks.app import create_app as tasks_app  # noqa: E402
from testbed.security import VARIABLES, security  # noqa: E402
from testbed.xvfb import start_xvfb  # noqa: E402

CREDENTIAL = "bench-desktop-credential-" + "fedcba9876543210" * 2
TARGET_MS = 0.1
CHANNEL_TARGET_MS = 0.2


# ------------------------------------------------------------------------- the baseline's app factories


def without_guard(app: FastAPI) -> FastAPI:
    # mypy takes starlette's type of `cls` (a factory protocol) and type[Guard] for disjoint: they are not
    app.user_middleware = [m for m in app.user_middleware if m.cls is not Guard]  # type: ignore[comparison-overlap]
    return app


def desktop_without_guard() -> FastAPI:
    return without_guard(desktop_app())


def tasks_without_guard() -> FastAPI:
    return without_guard(tasks_app())


# ------------------------------------------------------------------------------------------- the bench


Variant = Served


def variants(service: str, guarded_env: dict[str, str]) -> list[Variant]:
    module = {"desktop": "deskpilot.desktop.api", "tasks": "deskpilot.tasks.app"}[service]
    return [
        Variant("no Guard (baseline)", f"auth:{service}_without_guard", guarded_env),
        Variant("DESKPILOT_AUTH=off", f"{module}:create_app", {**guarded_env, "DESKPILOT_AUTH": "off"}),
        Variant("token", f"{module}:create_app", guarded_env),
    ]


def measure(group: list[Variant], method: str, path: str, body: bytes | None, rounds: int, n: int) -> None:
    clients = {}
    for v in group:
        headers = {"Authorization": f"Bearer {v.bearer}", "Origin": v.url}
        if body is not None:
            headers["Content-Type"] = "application/json"
        clients[v.name] = httpx.Client(base_url=v.url, headers=headers, timeout=30)
    try:
        for v in group:  # warm-up, and a check that every variant answers alike
            for _ in range(200):
                r = clients[v.name].request(method, path, content=body)
            assert r.status_code == 200, (v.name, r.status_code, r.text)
        interleave([(v, clients[v.name]) for v in group], method, path, body, rounds, n)
    finally:
        for c in clients.values():
            c.close()


def report(title: str, group: list[Variant]) -> float:
    p50 = {v.name: statistics.median(v.samples) * 1000 for v in group}
    print(f"  {title}")
    for v in group:
        p95 = sorted(v.samples)[int(0.95 * (len(v.samples) - 1))] * 1000
        print(f"    {v.name:<22} p50 {p50[v.name]:7.3f} ms   p95 {p95:7.3f} ms   ({len(v.samples)} requests)")
    base, off, token = (p50[v.name] for v in group)
    added = token - base
    verdict = f"target <= {TARGET_MS}: " + ("ok" if added <= TARGET_MS else "OVER")
    print(f"    added by every check (token - baseline):     {added:+7.3f} ms   ({verdict})")
    print(f"    added by the token alone (token - auth off): {token - off:+7.3f} ms", flush=True)
    return added


def channel(display_env: dict[str, str]) -> list[Variant]:
    """The desktop service as the appliance starts it now (two digests, called with the desktop credential)
    and as before (the token's digest, called with the token)."""
    module = "deskpilot.desktop.api:create_app"
    return [
        Variant("token (before)", module, {**display_env, "DESKPILOT_TOKEN_SHA256": digest(TOKEN)}),
        Variant(
            "desktop credential",
            module,
            {**display_env, "DESKPILOT_TOKEN_SHA256": f"{digest(TOKEN)},{digest(CREDENTIAL)}"},
            bearer=CREDENTIAL,
        ),
    ]


def report_channel(title: str, group: list[Variant]) -> None:
    before, after = (statistics.median(v.samples) * 1000 for v in group)
    print(f"  {title}")
    for v in group:
        p95 = sorted(v.samples)[int(0.95 * (len(v.samples) - 1))] * 1000
        p50 = statistics.median(v.samples) * 1000
        print(f"    {v.name:<22} p50 {p50:7.3f} ms   p95 {p95:7.3f} ms   ({len(v.samples)} requests)")
    verdict = f"target <= {CHANNEL_TARGET_MS}: " + ("ok" if after - before <= CHANNEL_TARGET_MS else "OVER")
    print(f"    added by the desktop credential: {after - before:+7.3f} ms   ({verdict})", flush=True)
    for v in group:
        v.clear()


def verdict_cost() -> None:
    """The Guard's decision alone, without HTTP: µs per request, for each scope the bench sends."""
    guard = Guard(app=None, policy=policy_for("bench", security(token=TOKEN)), refuse=None)  # type: ignore[arg-type]
    headers = [
        (b"host", b"127.0.0.1:9990"),
        (b"user-agent", b"python-httpx/0.28.1"),
        (b"accept", b"*/*"),
        (b"authorization", f"Bearer {TOKEN}".encode()),
        (b"origin", b"http://127.0.0.1:9990"),
        (b"content-type", b"application/json"),
        (b"content-length", b"28"),
    ]
    scopes = {
        "POST /computer-use": {"type": "http", "method": "POST", "path": "/computer-use", "headers": headers},
        "GET /tasks": {"type": "http", "method": "GET", "path": "/tasks", "headers": headers[:5]},
    }
    for name, scope in scopes.items():
        assert guard.verdict(scope) is None
        n = 100_000
        t0 = time.perf_counter()
        for _ in range(n):
            guard.verdict(scope)
        print(f"  Guard.verdict alone, {name}: {(time.perf_counter() - t0) / n * 1e6:.2f} µs")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--n", type=int, default=100, help="requests per variant per round")
    args = parser.parse_args()
    for name in [n for n in os.environ if n.upper() in VARIABLES]:  # only what each variant is given
        del os.environ[name]

    display = start_xvfb()
    state = tempfile.TemporaryDirectory(prefix="deskpilot-bench-auth-")
    desktop = variants("desktop", {"DESKTOP_DISPLAY": display.name, "DESKPILOT_TOKEN_SHA256": digest(TOKEN)})
    tasks = variants(
        "tasks",
        {
            "DESKPILOT_TOKEN": TOKEN,
            "TASKS_DATABASE_URL": f"sqlite:///{state.name}/agent.db",
            "TASKS_WORKER_ENABLED": "false",
            "TASKS_DESKTOP_FILES_DIR": "/nonexistent/deskpilot-bench/Desktop",
        },
    )
    credential = channel({"DESKTOP_DISPLAY": display.name})
    try:
        for v in [*desktop, *tasks, *credential]:
            v.env = {**display.env, **v.env}
            v.start(app_dirs=(ROOT / "bench",))
        print(
            f"Deskpilot auth bench: {os.cpu_count()} CPUs; {args.rounds} interleaved rounds of {args.n} "
            "requests per variant, keep-alive"
        )
        measure(desktop, "POST", "/computer-use", b'{"action": "cursor_position"}', args.rounds, args.n)
        report("POST /computer-use (cursor_position), desktop service", desktop)
        measure(tasks, "GET", "/tasks", None, args.rounds, args.n)
        report("GET /tasks, task service", tasks)
        verdict_cost()
        measure(credential, "POST", "/computer-use", CLICK, args.rounds, args.n)
        report_channel("click_mouse on an idle area, desktop service", credential)
        measure(credential, "POST", "/computer-use", SCREENSHOT, args.rounds, max(1, args.n // 5))
        report_channel("screenshot, desktop service", credential)
    finally:
        for v in [*desktop, *tasks, *credential]:
            v.stop()
        display.stop()
        state.cleanup()


if __name__ == "__main__":
    main()
