"""LiteLLM is imported once, off the event loop, and only when a model is configured. Each case runs in a
fresh interpreter: LiteLLM may already be loaded in the test process."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from deskpilot.config import MODEL_VARIABLES

ROOT = Path(__file__).resolve().parents[3]


def run(code: str) -> str:
    env = {k: v for k, v in os.environ.items() if k not in MODEL_VARIABLES and not k.startswith("AGENT_")}
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


WARM_UP = """
import asyncio, sys
from deskpilot.agent.executor import AgentExecutor
from deskpilot.config import AgentSettings
asyncio.run(AgentExecutor(AgentSettings({settings})).warm_up())
print("litellm" in sys.modules)
"""


def test_without_a_model_the_warm_up_imports_nothing() -> None:
    assert run(WARM_UP.format(settings="")) == "False"


def test_with_a_model_the_warm_up_imports_litellm() -> None:
    assert run(WARM_UP.format(settings="openai_base_url='http://127.0.0.1:9/v1'")) == "True"
    assert run(WARM_UP.format(settings="llm_proxy_url='http://127.0.0.1:9', model='fast'")) == "True"


def test_concurrent_callers_share_one_import_in_a_thread() -> None:
    code = """
import asyncio, threading
from deskpilot.agent.litellm_loader import litellm_module

async def main():
    callers = [asyncio.create_task(litellm_module()) for _ in range(3)]
    await asyncio.sleep(0.1)  # the loop runs meanwhile: the import is not on it
    importing = [t for t in threading.enumerate() if t.name == "import litellm"]
    modules = await asyncio.gather(*callers)
    again = await litellm_module()
    print(len(importing), len({id(m) for m in [*modules, again]}), modules[0].__name__)

asyncio.run(main())
"""
    assert run(code) == "1 1 litellm"
