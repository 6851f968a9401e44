"""The smoke suite (evals/smoke) scored through a real native sandbox, the real agent loop and LiteLLM, and
the real desktop: 0 % with a scripted model that does nothing, 100 % with the reference plan; and the
command line writing its three reports against the same appliance."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

import deskpilot
from deskpilot.cli import main
from deskpilot.client import Sandbox
from deskpilot.evaluation import load_suite, run_suite
from deskpilot.scripted import Plan, ScriptedModel
from tests.support.appliance import model_settings

SMOKE = Path(__file__).resolve().parents[3] / "evals" / "smoke"


@pytest.fixture(scope="module")
def scripted() -> Iterator[ScriptedModel]:
    with ScriptedModel().serve() as model:
        yield model


@pytest.fixture(scope="module")
def box(scripted: ScriptedModel) -> Iterator[Sandbox]:
    with deskpilot.sandbox(settings=model_settings(scripted)) as sandbox:
        yield sandbox


def test_the_suite_has_ten_tasks_over_the_bundled_applications() -> None:
    tasks = load_suite(SMOKE)
    assert len(tasks) >= 10
    text = " ".join(t.model_dump_json() for t in tasks)
    for app in ("terminal", "code editor", "file manager", "browser", "password manager"):
        assert app in text, app


def test_a_model_that_does_nothing_scores_zero(box: Sandbox, scripted: ScriptedModel, tmp_path: Path) -> None:
    # first: the clipboard is not part of the reset, so this runs before the reference fills it
    scripted.play([], plan=Plan.load(SMOKE / "plans" / "idle.yaml"))
    result = run_suite("smoke", load_suite(SMOKE), box, None)
    assert result.passed == 0, [(r.id, r.checks) for r in result.results if r.passed]
    assert all(r.status == "COMPLETED" for r in result.results), [
        (r.id, r.status, r.error) for r in result.results
    ]


def test_the_reference_plan_scores_every_task(box: Sandbox, scripted: ScriptedModel) -> None:
    scripted.play([], plan=Plan.load(SMOKE / "plans" / "reference.yaml"))
    result = run_suite("smoke", load_suite(SMOKE), box, None)
    failed = [
        (r.id, r.status, r.error, [c for c in r.checks if not c.passed])
        for r in result.results
        if not r.passed
    ]
    assert not failed
    assert result.score == 1.0
    assert all(r.steps > 0 for r in result.results)  # within each budget, or the task would have failed


def test_the_command_line_writes_its_reports(box: Sandbox, scripted: ScriptedModel, tmp_path: Path) -> None:
    scripted.play([], plan=Plan.load(SMOKE / "plans" / "reference.yaml"))
    suite = tmp_path / "suite"
    suite.mkdir()
    (suite / "note.yaml").write_text((SMOKE / "write-note.yaml").read_text())
    argv = [
        "eval",
        str(suite),
        "--url",
        box.desktop_url,
        "--agent-url",
        box.agent_url,
        "--out",
        str(tmp_path / "r"),
    ]
    assert main([*argv, "--token", box.token or ""]) == 0
    report = json.loads((tmp_path / "r" / "report.json").read_text())
    assert (report["passed"], report["total"], report["tasks"][0]["id"]) == (1, 1, "note")
    assert "| note | pass | COMPLETED |" in (tmp_path / "r" / "report.md").read_text()
    assert "<tr class=pass><td>note</td>" in (tmp_path / "r" / "report.html").read_text()
    # each task links its trajectory, which downloads with the token
    task = report["tasks"][0]
    assert task["trajectory"] == f"{box.agent_url}/tasks/{task['task_id']}/trajectory"
    headers = {"Authorization": f"Bearer {box.token}"} if box.token else {}
    archive = httpx.get(task["trajectory"], headers=headers, timeout=30)
    assert archive.status_code == 200 and archive.content[:2] == b"PK"
    assert "download</a>" in (tmp_path / "r" / "report.html").read_text()
    assert main(["eval", str(tmp_path / "nothing-here")]) == 2
