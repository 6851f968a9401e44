#!/usr/bin/env python3
"""`make demo`: one task, end to end, on the live desktop of a running `make run`, with no provider key.

A scripted model (examples/demo/plan.yaml) and a task service of the demo's own (a free port, a temporary
database) drive the appliance's desktop service; the running appliance's own settings are left alone. Watch
it at http://localhost:9992 (the live view), then read the task's conversation printed here.
    .venv/bin/python scripts/demo.py [--desktop-url http://127.0.0.1:9990] [--token $DESKPILOT_TOKEN]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from deskpilot import Agent  # noqa: E402
from deskpilot.client.native import free_port  # noqa: E402
from deskpilot.scripted import Plan, ScriptedModel  # noqa: E402

TASK = "Open a terminal and greet the user"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--desktop-url", default="http://127.0.0.1:9990")
    ap.add_argument("--token", default=os.environ.get("DESKPILOT_TOKEN"))
    ap.add_argument("--plan", default=str(ROOT / "examples" / "demo" / "plan.yaml"))
    args = ap.parse_args()
    try:
        httpx.get(f"{args.desktop_url}/health", timeout=5).raise_for_status()
    except httpx.HTTPError as exc:
        print(f"demo: no desktop at {args.desktop_url} ({exc}); start the appliance first: make run")
        return 1
    with ScriptedModel(plan=Plan.load(args.plan)).serve() as model, tempfile.TemporaryDirectory() as tmp:
        port = free_port()
        env = {
            **os.environ,
            "TASKS_PORT": str(port),
            "TASKS_DATABASE_URL": f"sqlite+aiosqlite:///{tmp}/demo.db",
            "TASKS_DESKTOP_URL": args.desktop_url,
            "AGENT_OPENAI_BASE_URL": model.base_url,
            "AGENT_MODEL": f"local/{model.model}",
            **({"DESKPILOT_TOKEN": args.token} if args.token else {}),
        }
        app = "deskpilot.tasks.app:create_app"
        service = subprocess.Popen(
            [sys.executable, "-m", "uvicorn", "--app-dir", str(ROOT), "--factory", app, "--port", str(port),
             "--log-level", "warning"],
            env=env, cwd=tmp,
        )  # fmt: skip
        try:
            return run(f"http://127.0.0.1:{port}", args.token)
        finally:
            service.terminate()
            service.wait(15)


def run(url: str, token: str | None) -> int:
    with Agent(url, token) as agent:
        deadline = time.monotonic() + 60
        while True:
            try:
                agent.health()
                break
            except Exception:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)
        task = agent.create(TASK)
        print(f"demo: task {task.id}: {TASK!r}; watch the desktop at http://localhost:9992")
        done = agent.wait(task.id, timeout=180)
        for message in agent.messages(task.id):
            tools = [b["name"] for b in message.content if b.get("type") == "tool_use"]
            print(f"  {message.role:9} {message.text[:100] or ', '.join(tools) or '(screenshot)'}")
        print(f"demo: {done.status}" + (f": {done.error}" if done.error else ""))
        return 0 if done.status == "COMPLETED" else 1


if __name__ == "__main__":
    sys.exit(main())
