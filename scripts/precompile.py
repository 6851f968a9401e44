"""Write the bytecode (.pyc) of the code and of the modules the services import into the image's venv.

The image's venv is installed without bytecode (pip --no-compile): compiling every module of every dependency
costs ~140 MB, much of it for modules the appliance never imports (most of LiteLLM's thousands, the rest of
SQLAlchemy's dialects). Here the code gets all its bytecode and every other package that of the modules the
services' start, the agent and the desktop session import (41 MB). A module left without bytecode still
loads: it is compiled in memory when first imported.
Run by the Dockerfile, as root, with the venv's interpreter:   .venv/bin/python scripts/precompile.py
"""

from __future__ import annotations

import compileall
import importlib
import os
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# Besides the services' factories (read from supervisord.conf) and the agent loop the task service loads:
# supervisord itself, what uvicorn picks at run time with its "auto" settings, what the services load on
# first use (X extensions, HTTP/2 clients, the SQLite driver), and LiteLLM, which the agent imports at its
# first model call.
MODULES = (
    "supervisor.supervisord",
    "supervisor.supervisorctl",
    "uvicorn.main",
    "uvloop",
    "httptools",
    "websockets",
    "Xlib.ext",
    "anyio",
    "httpcore",
    "h2.connection",
    "sqlalchemy.dialects.sqlite",
    "aiosqlite",
    "litellm",
)


def service_modules() -> list[str]:
    """The modules of the `--factory module:function` of every service in supervisord.conf, and the agent."""
    factories = re.findall(r"--factory\s+([\w.]+):", (ROOT / "supervisord.conf").read_text())
    assert factories, "no --factory in supervisord.conf"
    return [*factories, f"{factories[0].partition('.')[0]}.agent.executor"]


def main() -> int:
    # LiteLLM's bundled price map, not a download (as the agent imports it)
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    sys.path.insert(0, str(ROOT))
    ours = service_modules()
    for name in (*ours, *MODULES):
        importlib.import_module(name)  # writes the .pyc of every module it imports
    return 0 if compileall.compile_dir(ROOT / ours[0].partition(".")[0], quiet=1) else 1


if __name__ == "__main__":
    sys.exit(main())
