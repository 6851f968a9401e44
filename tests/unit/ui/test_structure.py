"""The UI server stays small: create_app only wires the app (pages, fragments and the proxy are routers
of their own modules), and no function of deskpilot/ui reaches 80 lines."""

from __future__ import annotations

import ast
from pathlib import Path

UI = Path(__file__).resolve().parents[3] / "deskpilot" / "ui"


def functions() -> dict[str, int]:
    """``module:function`` -> its length in lines, for every function of deskpilot/ui."""
    out = {}
    for path in sorted(UI.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                out[f"{path.stem}:{node.name}"] = (node.end_lineno or node.lineno) - node.lineno + 1
    return out


def test_create_app_only_wires_the_app() -> None:
    assert functions()["server:create_app"] <= 40


def test_no_function_of_the_ui_reaches_80_lines() -> None:
    assert {name: lines for name, lines in functions().items() if lines >= 80} == {}
