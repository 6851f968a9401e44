"""A real LiteLLM proxy (``litellm[proxy]`` from the venv) on loopback, in front of the scripted LLM.

Startup takes ~8 s, so tests share one per session. Offline-safe: LITELLM_LOCAL_MODEL_COST_MAP=True keeps
it from fetching its price map from GitHub. No database: a wrong key gives 400 ("No connected db.") and
no key gives 500 (its auth error handler needs prisma, which is not installed), so tests never expect a 401.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from testbed.groups import stop_group
from testbed.net import free_port, wait_http


@dataclass
class LiteLLMProxy:
    url: str
    master_key: str
    model_name: str
    context_window: int
    log: Path


def _config(upstream_base_url: str, model_name: str, master_key: str, context_window: int) -> dict:
    return {
        "model_list": [
            {
                "model_name": model_name,
                "litellm_params": {
                    "model": "openai/scripted",  # generic OpenAI-compatible upstream
                    "api_base": upstream_base_url,
                    "api_key": "sk-upstream-fake",
                },
                "model_info": {
                    "max_input_tokens": context_window,
                    "max_tokens": 4096,
                    "input_cost_per_token": 0.0,
                    "output_cost_per_token": 0.0,
                    "supports_vision": True,
                    "supports_function_calling": True,
                },
            }
        ],
        "general_settings": {"master_key": master_key},
        "litellm_settings": {"telemetry": False, "num_retries": 0, "request_timeout": 60},
    }


@contextlib.contextmanager
def litellm_proxy(
    upstream_base_url: str,
    model_name: str = "scripted-proxy",
    master_key: str = "sk-master-test",
    context_window: int = 200_000,
    timeout: float = 120,
) -> Iterator[LiteLLMProxy]:
    exe = Path(sys.executable).parent / "litellm"
    assert exe.exists(), f"{exe} missing: litellm[proxy] comes with the test extras (make venv)"
    with tempfile.TemporaryDirectory(prefix="litellm-proxy-") as tmp:
        cfg = Path(tmp) / "config.yaml"
        # JSON is YAML: no PyYAML needed to write the proxy's config
        cfg.write_text(json.dumps(_config(upstream_base_url, model_name, master_key, context_window)))
        port = free_port()
        log = Path(tmp) / "proxy.log"
        env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True", "LITELLM_LOG": "ERROR"}
        with log.open("wb") as out:
            proc = subprocess.Popen(
                [str(exe), "--config", str(cfg), "--host", "127.0.0.1", "--port", str(port)],
                env=env,
                cwd=tmp,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        try:
            url = f"http://127.0.0.1:{port}"
            try:
                wait_http(f"{url}/health/liveliness", timeout=timeout)
            except TimeoutError as e:
                raise RuntimeError(f"LiteLLM proxy did not start:\n{log.read_text()[-3000:]}") from e
            yield LiteLLMProxy(
                url=url, master_key=master_key, model_name=model_name, context_window=context_window, log=log
            )
        finally:
            stop_group(proc)
