"""The smoke suite (evals/smoke) scored through a real native sandbox, the real agent loop and LiteLLM, and
the real desktop: 0 % with a scripted model that does nothing, 100 % with the reference plan, 100 % again by
replaying the reference run's trajectories with no model; and the command line writing its three reports
against the same appliance."""

from __future__ import annotations

import json
import re
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

import deskpilot
from deskpilot.cli import main
from deskpilot.client import Sandbox
from deskpilot.client.native import free_port
from deskpilot.evaluation import SuiteResult, load_suite, run_suite
from deskpilot.evaluation.report import markdown
from deskpilot.scripted import Plan, ScriptedModel
from testbed.appliance import model_settings

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


@pytest.fixture(scope="module")
def trajectories(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("reference")


@pytest.fixture(scope="module")
def reference(box: Sandbox, scripted: ScriptedModel, trajectories: Path) -> SuiteResult:
    """The suite run once with the reference plan (after the idle model: the clipboard is not reset), each
    task's trajectory saved."""
    scripted.play([], plan=Plan.load(SMOKE / "plans" / "reference.yaml"))
    return run_suite("smoke", load_suite(SMOKE), box, None, save=trajectories)


def _actions(archive: Path) -> list[str]:
    with zipfile.ZipFile(archive) as z:
        return [json.loads(line)["action"]["action"] for line in z.read("trajectory.jsonl").splitlines()[1:]]


def test_the_reference_plan_scores_every_task(reference: SuiteResult) -> None:
    result = reference
    failed = [
        (r.id, r.status, r.error, [c for c in r.checks if not c.passed])
        for r in result.results
        if not r.passed
    ]
    assert not failed
    assert result.score == 1.0
    assert all(r.steps > 0 for r in result.results)  # within each budget, or the task would have failed
    assert all(r.tokens > 0 for r in result.results)  # what the scripted model reported, through LiteLLM


def test_the_reference_trajectories_replay_to_a_pass(
    box: Sandbox, reference: SuiteResult, trajectories: Path
) -> None:
    assert sorted(p.stem for p in trajectories.iterdir()) == sorted(r.id for r in reference.results)
    # the file actions and the paste are steps of their trajectories, replayable
    assert _actions(trajectories / "write-note.zip") == ["write_file"]
    assert _actions(trajectories / "read-and-sum.zip") == ["read_file", "write_file"]
    assert _actions(trajectories / "clipboard.zip") == ["paste_text"]

    replayed = run_suite("smoke", load_suite(SMOKE), box, None, replay=trajectories)
    failed = [(r.id, r.error, r.checks) for r in replayed.results if not r.passed]
    assert not failed
    assert replayed.score == 1.0 and replayed.replay == str(trajectories)
    for r in replayed.results:
        assert r.status == "REPLAYED" and r.replay is not None and r.task_id is None  # no task, no model
        steps = r.replay["steps"]
        assert isinstance(steps, int) and r.replay["replayed"] == steps > 0, r.replay
    assert "Replay of the trajectories" in markdown(replayed)
    # a task without its trajectory is an error of that task, not of the run
    (trajectories / "write-note.zip").unlink()
    missing = run_suite("smoke", load_suite(SMOKE)[-1:], box, None, replay=trajectories)
    assert not missing.results[0].passed and "no trajectory" in missing.results[0].error


def test_the_command_line_writes_its_reports(
    box: Sandbox, scripted: ScriptedModel, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
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
    saved = tmp_path / "saved"
    assert main([*argv, "--token", box.token or "", "--save-trajectories", str(saved)]) == 0
    assert [p.name for p in saved.iterdir()] == ["note.zip"]
    assert re.search(r"^\[1/1\] pass  note  COMPLETED  [\d.]+ s  2 steps$", capsys.readouterr().out, re.M)
    report = json.loads((tmp_path / "r" / "report.json").read_text())
    assert (report["passed"], report["total"], report["tasks"][0]["id"]) == (1, 1, "note")
    assert report["model"] == report["tasks"][0]["model"] == "local/scripted"  # not "default"
    assert "| note | pass | COMPLETED |" in (tmp_path / "r" / "report.md").read_text()
    page = (tmp_path / "r" / "report.html").read_text()
    assert '<tr class="pass">' in page and 'href="#task-note">note</a>' in page
    # each task's trajectory is kept beside the report, linked relative to it, and copied to --save-...
    task = report["tasks"][0]
    assert task["trajectory"] == "trajectories/note.zip" and 'href="trajectories/note.zip"' in page
    kept = (tmp_path / "r" / task["trajectory"]).read_bytes()
    assert kept[:2] == b"PK" and (saved / "note.zip").read_bytes() == kept
    assert main(["eval", str(tmp_path / "nothing-here")]) == 2
    # could not run: exit 2, saying why
    token = ["--token", box.token or ""]
    assert main([*argv, *token, "--model", "made-up/model"]) == 2
    said = capsys.readouterr().err
    assert "offers no model 'made-up/model'" in said and "local/scripted" in said
    assert main([*argv, *token, "--jobs", "2"]) == 2
    assert "--jobs runs private sandboxes" in capsys.readouterr().err
    nobody = f"http://127.0.0.1:{free_port()}"
    assert main(["eval", str(suite), "--url", nobody, "--out", str(tmp_path / "void")]) == 2
    assert "the appliance does not answer" in capsys.readouterr().err
    # the saved trajectory scores the suite again with no model
    replayed = [*argv[:-1], str(tmp_path / "replayed"), "--token", box.token or "", "--replay", str(saved)]
    assert main(replayed) == 0
    report = json.loads((tmp_path / "replayed" / "report.json").read_text())
    assert (report["replay"], report["model"], report["tasks"][0]["status"]) == (str(saved), None, "REPLAYED")
    assert "Replay of the trajectories" in (tmp_path / "replayed" / "report.md").read_text()
