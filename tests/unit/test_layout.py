"""The layout holds: each package imports only what sits below it, and modules and functions stay small.

computer   the contract          imports nothing of the services
client     the Python client     the contract, the task API's vocabulary (installable without the services)
scripted   the scripted model    nothing of the rest (installable without the services)
desktop    port 9990             the contract
tasks      port 9991             the contract (its client); never the agent loop: it loads it by name
agent      the loop, a plug-in   the contract, the task service's plug-in interface and vocabulary
ui         port 9992             the contract, the task API's vocabulary
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

APP = Path(__file__).resolve().parents[2] / "deskpilot"
SHARED = (
    "deskpilot",
    "deskpilot.config",
    "deskpilot.errors",
    "deskpilot.web",
    "deskpilot.bridge",
    "deskpilot.logs",
    "deskpilot.security",
)
# What the base distribution (the client, without the `server` extra) can import: light modules only.
LIGHT = ("deskpilot", "deskpilot.errors")
ALLOWED: dict[str, tuple[str, ...]] = {
    "deskpilot.computer": ("deskpilot.computer", "deskpilot.errors"),
    "deskpilot.client": ("deskpilot.client", "deskpilot.computer", "deskpilot.tasks.types", *LIGHT),
    "deskpilot.scripted": ("deskpilot.scripted", *LIGHT),
    "deskpilot.evaluation": (
        "deskpilot.evaluation",
        "deskpilot.client",
        "deskpilot.computer",
        "deskpilot.tasks.types",
        *LIGHT,
    ),
    "deskpilot.desktop": ("deskpilot.computer", "deskpilot.desktop", *SHARED),
    "deskpilot.tasks": ("deskpilot.computer", "deskpilot.tasks", *SHARED),
    "deskpilot.agent": (
        "deskpilot.computer",
        "deskpilot.agent",
        "deskpilot.tasks.types",
        "deskpilot.tasks.executor",
        "deskpilot.tasks.models",
        *SHARED,
    ),
    "deskpilot.ui": ("deskpilot.computer", "deskpilot.ui", "deskpilot.tasks.types", *SHARED),
}

MAX_MODULE_LINES = 400
MAX_FUNCTION_LINES = 80


def modules() -> list[Path]:
    return sorted(p for p in APP.rglob("*.py") if "migrations" not in p.parts)


def module_name(path: Path) -> str:
    parts = path.relative_to(APP.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported(tree: ast.AST) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return {n for n in names if n == "deskpilot" or n.startswith("deskpilot.")}


def within(name: str, prefixes: tuple[str, ...]) -> bool:
    """``name`` is one of ``prefixes`` or inside one; ``deskpilot`` stands for the top module alone (its
    version), not for everything under it."""
    return any(name == p or (p != "deskpilot" and name.startswith(p + ".")) for p in prefixes)


@pytest.mark.parametrize("path", modules(), ids=lambda p: str(p.relative_to(APP.parent)))
def test_imports_follow_the_layout(path: Path) -> None:
    name = module_name(path)
    package = next((p for p in ALLOWED if within(name, (p,))), None)
    if package is None:
        return  # the shared modules at the top
    bad = sorted(m for m in imported(ast.parse(path.read_text())) if not within(m, ALLOWED[package]))
    assert not bad, f"{name} imports {bad}; {package} may import only {ALLOWED[package]}"


# what only the services need (the `server` extra): the client must load without any of it
SERVER_ONLY = (
    "Xlib", "fastapi", "starlette", "sqlalchemy", "litellm", "pydantic_settings", "uvicorn", "numpy",
)  # fmt: skip
CLIENT_MODULES = (
    "deskpilot.computer.actions",
    "deskpilot.computer.client",
    "deskpilot.computer.geometry",
    "deskpilot.computer.tools",
    "deskpilot.client",
    "deskpilot.client.sandboxes",
    "deskpilot.scripted",
    "deskpilot.evaluation",
    "deskpilot.cli",
)


def test_the_contract_loads_without_x_or_a_web_server() -> None:
    """The contract, the client and the scripted model import nothing of the server stack (an install
    without the `server` extra runs them), checked in a fresh interpreter."""
    import subprocess
    import sys

    code = (
        "import importlib, sys\n"
        f"for name in {CLIENT_MODULES!r}: importlib.import_module(name)\n"
        "import deskpilot; deskpilot.sandbox, deskpilot.Desktop, deskpilot.Agent\n"
        f"bad = [m for m in {SERVER_ONLY!r} if m in sys.modules]\n"
        "sys.exit(','.join(bad) or 0)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize("path", modules(), ids=lambda p: str(p.relative_to(APP.parent)))
def test_modules_and_functions_stay_small(path: Path) -> None:
    source = path.read_text()
    assert source.count("\n") < MAX_MODULE_LINES, f"{path.name} has {source.count(chr(10))} lines"
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            length = (node.end_lineno or node.lineno) - node.lineno + 1
            assert length <= MAX_FUNCTION_LINES, f"{node.name} in {path.name} has {length} lines"
