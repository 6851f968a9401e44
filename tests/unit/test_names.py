"""Names say what they hold: no two classes of the app share a name, and the task service, the agent loop
and the UI bind no one-letter names (aliases such as ``S = TaskStatus`` included) beyond loop variables,
comprehensions and x/y coordinates."""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

APP = Path(__file__).resolve().parents[2] / "deskpilot"
SPELLED_OUT = ("agent", "tasks", "ui")
ALLOWED = {"_", "x", "y"}


def test_no_two_classes_share_a_name() -> None:
    where: dict[str, list[str]] = defaultdict(list)
    for path in sorted(APP.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ClassDef):
                where[node.name].append(str(path.relative_to(APP.parent)))
    assert {name: paths for name, paths in where.items() if len(paths) > 1} == {}


def loop_targets(tree: ast.AST) -> set[int]:
    """The names bound by `for` statements and comprehensions (their ids)."""
    loops = (node for node in ast.walk(tree) if isinstance(node, ast.For | ast.AsyncFor | ast.comprehension))
    return {id(name) for loop in loops for name in ast.walk(loop.target) if isinstance(name, ast.Name)}


def one_letter_names(path: Path) -> list[str]:
    tree = ast.parse(path.read_text())
    loops = loop_targets(tree)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store) and id(node) not in loops:
            name = node.id
        elif isinstance(node, ast.arg):
            name = node.arg
        elif isinstance(node, ast.ExceptHandler) and node.name:
            name = node.name
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
            name = node.attr
        else:
            continue
        if len(name) == 1 and name not in ALLOWED:
            found.append(f"{path.relative_to(APP.parent)}:{node.lineno}: {name}")
    return found


def test_no_one_letter_names_in_the_task_service_agent_and_ui() -> None:
    paths = sorted(p for package in SPELLED_OUT for p in (APP / package).rglob("*.py"))
    assert [line for path in paths for line in one_letter_names(path)] == []
