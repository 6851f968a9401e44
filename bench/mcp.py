"""Screenshot through MCP (SSE and streamable HTTP) vs the same screenshot through POST /computer-use.

The desktop service runs as in the appliance (uvicorn, its own process) on a private Xvfb 1920x1080 with
xfwm4 and two xterms full of text. Each figure is the client-side time until the base64 PNG is in hand.
Baseline, measured in the same run: ``POST /computer-use {"action": "screenshot"}``. Target: MCP p50 at
most 1.3 x the baseline.

    .venv/bin/python bench/mcp.py [-n 100]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[0] = str(ROOT)  # not bench/: this file's name would shadow the mcp package

import httpx  # noqa: E402
from mcp import Client  # noqa: E402
from mcp.client.sse import sse_client  # noqa: E402

from tests.support.net import free_port, wait_http  # noqa: E402
from tests.support.xvfb import start_window_manager, start_xvfb  # noqa: E402

TARGET_RATIO = 1.3


def pct(values: list[float], p: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, round(p / 100 * (len(s) - 1)))]


async def timed(n: int, shot: Callable[[], Awaitable[str]]) -> list[float]:
    for _ in range(10):  # warm-up: connections, SHM segment, encoder
        await shot()
    times = []
    for _ in range(n):
        t = time.perf_counter()
        assert len(await shot()) > 100_000
        times.append((time.perf_counter() - t) * 1000)
    return times


async def measure(url: str, n: int) -> dict[str, list[float]]:
    results: dict[str, list[float]] = {}
    async with httpx.AsyncClient(base_url=url, timeout=30) as http:

        async def over_http() -> str:
            r = await http.post("/computer-use", json={"action": "screenshot"})
            return r.json()["data"]["image"]

        results["POST /computer-use (baseline)"] = await timed(n, over_http)

    transports = {"MCP over SSE": sse_client(f"{url}/mcp"), "MCP streamable HTTP": f"{url}/mcp"}
    for label, transport in transports.items():
        async with Client(transport) as client:

            async def over_mcp() -> str:
                return (await client.call_tool("computer_screenshot", {})).content[0].data

            results[label] = await timed(n, over_mcp)
    return results


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
            [sys.executable, "-m", "uvicorn", "--factory", "app.desktop.api:create_app",
             "--port", str(port), "--log-level", "warning"],
            cwd=ROOT, env=env, start_new_session=True,  # its own group, so display.stop() ends it
        )  # fmt: skip
        display.children.append(server)
        url = f"http://127.0.0.1:{port}"
        wait_http(f"{url}/health")
        time.sleep(1)  # let the xterms draw
        results = asyncio.run(measure(url, args.n))
    finally:
        display.stop()

    base = statistics.median(results["POST /computer-use (baseline)"])
    print(f"screenshot 1920x1080 PNG, {args.n} calls each (client time until the base64 image is in hand)")
    for label, times in results.items():
        p50 = statistics.median(times)
        print(f"  {label:32s} p50 {p50:6.1f} ms  p95 {pct(times, 95):6.1f} ms  ratio {p50 / base:4.2f}x")
    worst = max(statistics.median(t) for t in results.values()) / base
    verdict = "meets" if worst <= TARGET_RATIO else "misses"
    print(f"MCP / HTTP p50 ratio {worst:.2f} (target <= {TARGET_RATIO}): {verdict} the target")


if __name__ == "__main__":
    main()
