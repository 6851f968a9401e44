"""The layout holds: each package imports only what sits below it, and modules and functions stay small.

app.computer   the contract          imports nothing of the services
app.desktop    port 9990             the contract
app.tasks      port 9991             the contract (its client); never the agent loop: it loads it by name
app.agent      the loop, a plug-in   the contract, the task service's plug-in interface and vocabulary
app.ui         port 9992             the contract, the task API's vocabulary
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

APP = Path(__file__).resolve().parents[2] / "app"
SHARED = ("app", "app.config", "app.errors", "app.web", "app.bridge", "app.logs")
ALLOWED: dict[str, tuple[str, ...]] = {
    "app.computer": ("app.computer", "app.errors"),
    "app.desktop": ("app.computer", "app.desktop", *SHARED),
    "app.tasks": ("app.computer", "app.tasks", *SHARED),
    "app.agent": (
        "app.computer",
        "app.agent",
        "app.tasks.types",
        "app.tasks.executor",
        "app.tasks.models",
        *SHARED,
    ),
    "app.ui": ("app.computer", "app.ui", "app.tasks.types", *SHARED),
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
    return {n for n in names if n == "app" or n.startswith("app.")}


def within(name: str, prefixes: tuple[str, ...]) -> bool:
    return any(name == p or name.startswith(p + ".") for p in prefixes)


@pytest.mark.parametrize("path", modules(), ids=lambda p: str(p.relative_to(APP.parent)))
def test_imports_follow_the_layout(path: Path) -> None:
    name = module_name(path)
    package = next((p for p in ALLOWED if within(name, (p,))), None)
    if package is None:
        return  # the shared modules at the top
    bad = sorted(m for m in imported(ast.parse(path.read_text())) if not within(m, ALLOWED[package]))
    assert not bad, f"{name} imports {bad}; {package} may import only {ALLOWED[package]}"


def test_the_contract_loads_without_x_or_a_web_server() -> None:
    import subprocess
    import sys

    code = (
        "import sys, app.computer.actions, app.computer.tools, app.computer.client, app.computer.geometry\n"
        "bad = [m for m in ('Xlib', 'fastapi', 'starlette', 'sqlalchemy', 'litellm') if m in sys.modules]\n"
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
