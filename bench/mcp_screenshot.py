"""Screenshot through MCP (SSE and streamable HTTP) vs the same screenshot through POST /computer-use.

The desktop service runs as in the appliance (uvicorn, its own process) on a private Xvfb 1920x1080 with
xfwm4 and two xterms full of text. Each figure is the client-side time until the base64 PNG is in hand.
Baseline, measured in the same run: ``POST /computer-use {"action": "screenshot"}``. Target: MCP p50 at
most 1.3 x the baseline.

Measured with both official MCP clients, each against a baseline from its own runtime: the Python SDK
(httpx for the baseline) and, when ``bench/mcp-ts`` is installed (``make bench`` does it), the TypeScript
SDK through Node.js (fetch for the baseline).

    .venv/bin/python bench/mcp_screenshot.py [-n 100]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import httpx  # noqa: E402
from mcp import Client  # noqa: E402
from mcp.client.sse import sse_client  # noqa: E402
from mcp.types import ImageContent, JSONRPCResponse  # noqa: E402

from testbed.net import free_port, wait_http  # noqa: E402
from testbed.xvfb import start_window_manager, start_xvfb  # noqa: E402

TARGET_RATIO = 1.3
BASELINE = "POST /computer-use (baseline)"
SSE_WITHOUT_DEBUG_LINE = "  (same, client's debug line off)"
TS_CLIENT = ROOT / "bench" / "mcp-ts"


def pct(values: list[float], p: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, round(p / 100 * (len(s) - 1)))]


async def interleaved(n: int, shots: dict[str, Callable[[], Awaitable[str]]]) -> dict[str, list[float]]:
    """Time ``n`` rounds of one call per transport, rotating which goes first, so that drift in the
    machine's speed (other processes, CPU frequency) lands on every transport alike."""
    for shot in shots.values():
        for _ in range(10):  # warm-up: connections, SHM segment, encoder
            await shot()
    times: dict[str, list[float]] = {label: [] for label in shots}
    order = list(shots.items())
    for i in range(n):
        for label, shot in order[i % len(order) :] + order[: i % len(order)]:
            t = time.perf_counter()
            assert len(await shot()) > 100_000
            times[label].append((time.perf_counter() - t) * 1000)
    return times


async def measure(url: str, n: int) -> dict[str, list[float]]:
    async with contextlib.AsyncExitStack() as stack:
        http = await stack.enter_async_context(httpx.AsyncClient(base_url=url, timeout=30))
        sse = await stack.enter_async_context(Client(sse_client(f"{url}/mcp")))
        streamable = await stack.enter_async_context(Client(f"{url}/mcp"))

        async def over_http() -> str:
            r = await http.post("/computer-use", json={"action": "screenshot"})
            return r.json()["data"]["image"]

        def over_mcp(client: Client) -> Callable[[], Awaitable[str]]:
            async def shot() -> str:
                image = (await client.call_tool("computer_screenshot", {})).content[0]
                assert isinstance(image, ImageContent)
                return image.data

            return shot

        return await interleaved(
            n,
            {
                BASELINE: over_http,
                "MCP over SSE": over_mcp(sse),
                SSE_WITHOUT_DEBUG_LINE: without_debug_line(over_mcp(sse)),
                "MCP streamable HTTP": over_mcp(streamable),
            },
        )


def without_debug_line(shot: Callable[[], Awaitable[str]]) -> Callable[[], Awaitable[str]]:
    """A diagnostic, not the verdict: the SSE client runs ``logger.debug(f"Received server message:
    {message}")`` (mcp/client/sse.py), which formats the whole 1.3 MB reply whether or not debug logging
    is on. While this shot runs, a reply formats as a stub, so the row shows what that one line costs."""

    async def run() -> str:
        JSONRPCResponse.__str__ = lambda self: "JSONRPCResponse(...)"  # type: ignore[method-assign]
        try:
            return await shot()
        finally:
            del JSONRPCResponse.__str__

    return run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", type=int, default=100, help="timed screenshots per transport")
    args = parser.parse_args()

    display = start_xvfb()
    try:
        start_window_manager(display)
        for i in range(2):
            text = "seq 1 100000 | tr '\\n' ' '; exec sleep 600"
            display.spawn(["xterm", "-geometry", f"120x50+{40 + 900 * i}+40", "-e", "sh", "-c", text])
        port = free_port()
        env = {**os.environ, "DESKTOP_DISPLAY": display.name}
        server = subprocess.Popen(
            [sys.executable, "-m", "uvicorn", "--factory", "deskpilot.desktop.api:create_app",
             "--port", str(port), "--log-level", "warning"],
            cwd=ROOT, env=env, start_new_session=True,  # its own group, so display.stop() ends it
        )  # fmt: skip
        display.children.append(server)
        url = f"http://127.0.0.1:{port}"
        wait_http(f"{url}/health")
        time.sleep(1)  # let the xterms draw
        python = asyncio.run(measure(url, args.n))
        typescript = measure_typescript(url, args.n)
    finally:
        display.stop()

    print(f"screenshot 1920x1080 PNG, {args.n} calls each (client time until the base64 image is in hand)")
    report("official Python SDK client (mcp), baseline httpx", python)
    if typescript is None:
        print(f"official TypeScript SDK client: not installed (make bench, or npm ci --prefix {TS_CLIENT})")
    else:
        report("official TypeScript SDK client (@modelcontextprotocol/sdk), baseline fetch", typescript)


def report(title: str, results: dict[str, list[float]]) -> None:
    """Print one client's figures and its verdict on the issue's target (SSE against the baseline)."""
    base = statistics.median(results[BASELINE])
    print(title)
    for label, times in results.items():
        p50 = statistics.median(times)
        print(f"  {label:34s} p50 {p50:6.1f} ms  p95 {pct(times, 95):6.1f} ms  ratio {p50 / base:4.2f}x")
    sse = statistics.median(results["MCP over SSE"]) / base
    verdict = "meets" if sse <= TARGET_RATIO else "misses"
    print(f"  SSE / HTTP p50 ratio {sse:.2f} (target <= {TARGET_RATIO}): {verdict} the target")


def measure_typescript(url: str, n: int) -> dict[str, list[float]] | None:
    node = shutil.which("node")
    if node is None or not (TS_CLIENT / "node_modules").is_dir():
        return None
    out = subprocess.run([node, "client.mjs", url, str(n)], cwd=TS_CLIENT, capture_output=True, text=True)
    if out.returncode != 0:
        raise SystemExit(f"bench/mcp-ts/client.mjs failed:\n{out.stderr}")
    return json.loads(out.stdout)


if __name__ == "__main__":
    main()
