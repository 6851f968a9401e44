"""A service of the appliance in a uvicorn process of its own (one worker, as the appliance runs it), the unit
the overhead benches compare side by side (auth.py, metrics.py, tracing.py), and the requests they send."""

from __future__ import annotations

import random
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import httpx  # noqa: E402

from testbed.groups import stop_group  # noqa: E402
from testbed.net import free_port, wait_http  # noqa: E402

TOKEN = "bench-token-" + "0123456789abcdef" * 2
CLICK = b'{"action": "click_mouse", "coordinates": {"x": 1900, "y": 1060}, "button": "left", "clickCount": 1}'
SCREENSHOT = b'{"action": "screenshot"}'


@dataclass
class Served:
    name: str
    factory: str  # module:function for uvicorn --factory
    env: dict[str, str]  # its whole environment
    url: str = ""
    proc: subprocess.Popen[bytes] | None = None
    samples: list[float] = field(default_factory=list)
    bearer: str = TOKEN

    def start(self, *, app_dirs: tuple[Path, ...] = (), access_log: bool = True, wait_s: float = 60) -> None:
        port = free_port()
        self.url = f"http://127.0.0.1:{port}"
        argv = [sys.executable, "-m", "uvicorn"]
        for directory in (ROOT, *app_dirs):
            argv += ["--app-dir", str(directory)]
        argv += ["--factory", self.factory, "--port", str(port), "--workers", "1", "--log-level", "warning"]
        argv += [] if access_log else ["--no-access-log"]
        self.proc = subprocess.Popen(
            argv, env=self.env, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            start_new_session=True,
        )  # fmt: skip
        wait_http(f"{self.url}/health", ok=(200, 503), timeout=wait_s)

    def stop(self, timeout: float = 15) -> None:
        if self.proc is not None:
            stop_group(self.proc, timeout=timeout)  # a service flushes what it holds (spans) on its way out


Pair = tuple[Served, httpx.Client]


def interleave(
    pairs: Sequence[Pair], method: str, path: str, body: bytes | None, rounds: int, n: int
) -> None:
    """``rounds`` rounds of ``n`` timed requests per service, in a new random order each round, so that load
    from elsewhere falls on every service alike; each request's seconds go to its service's ``samples``."""
    for _ in range(rounds):
        for served, client in random.sample(list(pairs), len(pairs)):
            for _ in range(n):
                t0 = time.perf_counter()
                client.request(method, path, content=body)
                served.samples.append(time.perf_counter() - t0)
