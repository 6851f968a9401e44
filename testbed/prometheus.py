"""A real Prometheus (Debian's ``prometheus`` package) scraping the services a test names, with the token as
a bearer credential read from a file, as docs/operations.md#metrics configures it; its own config and storage
in a temporary directory, on a free port, stopped on exit."""

from __future__ import annotations

import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import yaml

from testbed.groups import stop_group
from testbed.net import free_port, wait_http


@dataclass
class Prometheus:
    url: str
    log: Path

    def query(self, promql: str) -> list[dict[str, Any]]:
        """The instant query's result vector (``[{metric: {...}, value: [time, "text"]}]``)."""
        r = httpx.get(f"{self.url}/api/v1/query", params={"query": promql}, timeout=10)
        r.raise_for_status()
        body = r.json()
        assert body["status"] == "success", body
        return list(body["data"]["result"])

    def targets(self) -> list[dict[str, Any]]:
        r = httpx.get(f"{self.url}/api/v1/targets", timeout=10)
        r.raise_for_status()
        return list(r.json()["data"]["activeTargets"])

    def wait(self, promql: str, timeout: float = 60) -> list[dict[str, Any]]:
        """The query's result once it is not empty (scrapes come every second)."""
        deadline = time.monotonic() + timeout
        while True:
            found = self.query(promql)
            if found:
                return found
            if time.monotonic() > deadline:
                raise TimeoutError(f"{promql}: nothing after {timeout} s; targets {self.targets()}")
            time.sleep(0.5)


def config(jobs: dict[str, str], token_file: Path) -> dict[str, Any]:
    """A scrape job per service URL, every second, with the token from ``token_file``."""
    return {
        "global": {"scrape_interval": "1s", "scrape_timeout": "1s"},
        "scrape_configs": [
            {
                "job_name": job,
                "metrics_path": "/metrics",
                "authorization": {"type": "Bearer", "credentials_file": str(token_file)},
                "static_configs": [{"targets": [urlsplit(url).netloc]}],
            }
            for job, url in jobs.items()
        ],
    }


@contextmanager
def prometheus(jobs: dict[str, str], token: str) -> Iterator[Prometheus]:
    """Prometheus scraping ``jobs`` ({job name: service URL}) with ``token``."""
    binary = shutil.which("prometheus")
    assert binary, "prometheus is missing: scripts/install-system.sh --test installs Debian's package"
    with tempfile.TemporaryDirectory(prefix="deskpilot-prometheus-") as tmp:
        base = Path(tmp)
        token_file = base / "token"
        token_file.write_text(token)
        token_file.chmod(0o600)
        (base / "prometheus.yml").write_text(yaml.safe_dump(config(jobs, token_file)))
        check = subprocess.run(
            ["promtool", "check", "config", str(base / "prometheus.yml")], capture_output=True, text=True
        )
        assert check.returncode == 0, check.stdout + check.stderr
        port = free_port()
        argv = [binary, f"--config.file={base / 'prometheus.yml'}", f"--storage.tsdb.path={base / 'data'}"]
        argv += [f"--web.listen-address=127.0.0.1:{port}", "--log.level=warn"]
        log = base / "prometheus.log"
        with log.open("wb") as out:
            proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
        try:
            url = f"http://127.0.0.1:{port}"
            wait_http(f"{url}/-/ready", timeout=30)
            yield Prometheus(url, log)
        finally:
            stop_group(proc)
