"""A service of the appliance in a uvicorn process of its own (one worker, as the appliance runs it), the unit
the overhead benches compare side by side (auth.py, metrics.py, tracing.py), and the requests they send."""

from __future__ import annotations

import ctypes
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
    # CPU time the process spent while its own requests were timed (ns): its main thread (the event loop,
    # where a request's path runs) and all of its threads (with the helpers its requests wait on, and the
    # background work that comes with them)
    cpu_main: int = 0
    cpu_all: int = 0

    def start(
        self,
        *,
        app_dirs: tuple[Path, ...] = (),
        access_log: bool = True,
        wait_s: float = 60,
        wrapper: Sequence[str] = (),
    ) -> None:
        """``wrapper``: a command the interpreter runs under (bench/instructions.py: Valgrind's)."""
        port = free_port()
        self.url = f"http://127.0.0.1:{port}"
        argv = [*wrapper, sys.executable, "-m", "uvicorn"]
        for directory in (ROOT, *app_dirs):
            argv += ["--app-dir", str(directory)]
        argv += ["--factory", self.factory, "--port", str(port), "--workers", "1", "--log-level", "warning"]
        argv += [] if access_log else ["--no-access-log"]
        self.proc = subprocess.Popen(
            argv, env=self.env, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            start_new_session=True, preexec_fn=same_layout,
        )  # fmt: skip
        wait_http(f"{self.url}/health", ok=(200, 503), timeout=wait_s)

    def cpu(self) -> tuple[int, int]:
        """The CPU time of its main thread and of all its live threads so far (ns, the scheduler's own
        accounting in /proc: exact, where utime and stime count clock ticks)."""
        assert self.proc is not None
        pid, main, every = self.proc.pid, 0, 0
        for task in Path(f"/proc/{pid}/task").iterdir():
            try:
                ran = int((task / "schedstat").read_text().split()[0])
            except (FileNotFoundError, ProcessLookupError):
                continue  # a thread that ended meanwhile
            every += ran
            main += ran if task.name == str(pid) else 0
        return main, every

    def clear(self) -> None:
        self.samples.clear()
        self.cpu_main = self.cpu_all = 0

    def stop(self, timeout: float = 15) -> None:
        if self.proc is not None:
            stop_group(self.proc, timeout=timeout)  # a service flushes what it holds (spans) on its way out


Pair = tuple[Served, httpx.Client]
ADDR_NO_RANDOMIZE = 0x0040000  # <linux/personality.h>


def same_layout() -> None:
    """In the child, before it runs Python: no address-space randomisation, so that every process of the same
    code lays out its memory alike (with one hash seed, its dicts too) and two of them differ less."""
    libc = ctypes.CDLL(None, use_errno=True)
    current = libc.personality(0xFFFFFFFF)  # asks, changes nothing
    if current != -1:
        libc.personality(current | ADDR_NO_RANDOMIZE)


def interleave(
    pairs: Sequence[Pair], method: str, path: str, body: bytes | None, rounds: int, n: int
) -> None:
    """``rounds`` rounds of ``n`` timed requests per service, in a new random order each round, so that load
    from elsewhere falls on every service alike; each request's seconds go to its service's ``samples``, and
    the CPU time its process spent meanwhile to ``cpu_main`` and ``cpu_all``."""
    for _ in range(rounds):
        for served, client in random.sample(list(pairs), len(pairs)):
            main, every = served.cpu()
            for _ in range(n):
                t0 = time.perf_counter()
                client.request(method, path, content=body)
                served.samples.append(time.perf_counter() - t0)
            main_after, every_after = served.cpu()
            served.cpu_main += main_after - main
            served.cpu_all += every_after - every
