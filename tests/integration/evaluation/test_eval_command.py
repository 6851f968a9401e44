"""``deskpilot eval`` as a CI job runs it: two private native sandboxes at once (``--jobs 2``), the scripted
model through LiteLLM, ``--json`` on stdout with a line per task on stderr, exit 1 for a failing task; then,
with every sandbox stopped, the report's links lead to the trajectories kept beside it, and its HTML, opened
in Chromium, steps through a task's frames, actions and the model's words."""

from __future__ import annotations

import json
import re
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from playwright.sync_api import expect, sync_playwright

from deskpilot.cli import main
from deskpilot.scripted import Plan, ScriptedModel
from testbed.appliance import model_settings
from testbed.browser import PageErrors, launch_chromium

SMOKE = Path(__file__).resolve().parents[3] / "evals" / "smoke"
SAID = "I open a terminal first, then make the folder."


@pytest.fixture(scope="module")
def scripted() -> Iterator[ScriptedModel]:
    """The reference plan, the folder task's first step saying what the model is about to do."""
    plan = yaml.safe_load((SMOKE / "plans" / "reference.yaml").read_text())
    plan["tasks"].insert(
        0,
        {
            "match": "create the folder Documents/reports",
            "steps": [
                {"text": SAID, "tool": "computer_application", "args": {"application": "terminal"}},
                {"tool": "computer_type_text", "args": {"text": "mkdir -p ~/Documents/reports\n"}},
                {"tool": "set_task_status", "args": {"status": "completed", "description": "made"}},
            ],
        },
    )
    with ScriptedModel().serve() as model:
        model.play([], plan=Plan.parse(json.dumps(plan)))
        yield model


def suite(folder: Path) -> Path:
    """A slow task first (the browser: one job starts it, the other starts its sandbox meanwhile), two quick
    ones, and one whose check fails."""
    folder.mkdir()
    for name in ("browser-local-page", "terminal-mkdir", "write-note"):
        (folder / f"{name}.yaml").write_text((SMOKE / f"{name}.yaml").read_text())
    wrong = (SMOKE / "write-note.yaml").read_text().replace('contains: "call Anna at 3"', "equals: nothing")
    (folder / "note-wrong.yaml").write_text(wrong)
    return folder


def test_two_jobs_json_and_a_report_that_outlives_its_sandboxes(
    scripted: ScriptedModel,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    for name, value in model_settings(scripted).items():
        monkeypatch.setenv(name, value)  # the private sandboxes' agent on the scripted model
    out = tmp_path / "report"
    assert main(["eval", str(suite(tmp_path / "suite")), "--jobs", "2", "--json", "--out", str(out)]) == 1
    printed = capsys.readouterr()
    report = json.loads(printed.out)  # stdout is the report alone
    assert (report["passed"], report["total"], report["jobs"]) == (3, 4, 2)
    assert report["model"] == "local/scripted"  # the model that ran, though none was named
    tasks = {t["id"]: t for t in report["tasks"]}
    assert len({t["desktop"] for t in tasks.values()}) == 2, "the tasks ran on one sandbox"
    assert tasks["note-wrong"]["checks"][0]["detail"] == "is 'call Anna at 3\\n', not 'nothing'"
    lines = [line for line in printed.err.splitlines() if line.startswith("[")]
    assert len(lines) == 4 and any(re.match(r"\[\d/4\] FAIL  note-wrong  COMPLETED", x) for x in lines), lines
    assert tasks["terminal-mkdir"]["words"][0] == SAID

    # main() has stopped its sandboxes: what the report links is beside it, not on their ports
    markdown = (out / "report.md").read_text()
    assert "127.0.0.1" not in markdown
    for task in tasks.values():
        assert task["trajectory"] == f"trajectories/{task['id']}.zip"
        assert f"[zip]({task['trajectory']})" in markdown
        with zipfile.ZipFile(out / task["trajectory"]) as archive:
            assert archive.read("trajectory.jsonl").startswith(b'{"format":"deskpilot-trajectory/1"')
    assert json.loads((out / "report.json").read_text())["tasks"] == report["tasks"]

    # the HTML report in Chromium, from the file: the folder task's steps, frames shown
    with sync_playwright() as p:
        browser = launch_chromium(p)
        page = browser.new_page(viewport={"width": 1400, "height": 900})
        errors = PageErrors(page)
        page.goto((out / "report.html").as_uri())
        expect(page.locator("#summary tr.fail")).to_have_count(1)
        task = page.locator("#task-terminal-mkdir")
        expect(task.locator(".check.pass")).to_have_count(2)
        viewer = task.locator(".viewer")
        first = viewer.locator(".step.current")
        expect(first).to_have_attribute("data-step", "1")
        expect(first.locator(".step-action")).to_contain_text("terminal")
        expect(first.locator(".words")).to_have_text(SAID)
        after = first.locator(".frame-after img")
        expect(after).to_be_visible()
        assert after.evaluate("img => img.complete && img.naturalWidth") > 0  # the frame file loads
        viewer.get_by_role("button", name="next →").click()
        second = viewer.locator(".step.current")
        expect(second).to_have_attribute("data-step", "2")
        expect(second.locator(".step-action")).to_contain_text("mkdir")
        for label in ("before", "after"):
            img = second.locator(f".frame-{label} img")
            expect(img).to_be_visible()
            assert img.evaluate("img => img.complete && img.naturalWidth") > 0, label
        expect(viewer.locator(".step:not(.current)").first).to_be_hidden()
        errors.check()
        browser.close()
