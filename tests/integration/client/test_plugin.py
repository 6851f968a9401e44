"""The pytest plugin through pytest's own pytester, in a pytest of its own (a subprocess), as a user runs it:
its fixtures boot a native sandbox, a small suite passes, a failing test leaves its screenshots and action
log and the report names them, and nothing is left running afterwards. Then the example a team copies
(examples/ci) runs as its README says."""

from __future__ import annotations

import json
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import httpx
import pytest

from deskpilot.client import processes
from tests.integration.client.conftest import plugin_args

ROOT = Path(__file__).resolve().parents[3]

SUITE = """
import json, os
from pathlib import Path

import pytest


@pytest.fixture(scope="session", autouse=True)
def where(deskpilot_sandbox):
    urls = [deskpilot_sandbox.desktop_url, deskpilot_sandbox.agent_url]
    Path(os.environ["SANDBOX_FILE"]).write_text(json.dumps(urls))


def test_the_screen(desktop):
    assert desktop.screenshot().size == (1920, 1080)
    desktop.write_file("left-over.txt", "from the first test")


def test_a_clean_home_and_no_tasks(desktop, agent):
    with pytest.raises(Exception):
        desktop.read_file("left-over.txt")
    assert agent.tasks() == []
    agent.create("never runs: no model", scheduled_for="2999-01-01T00:00:00Z")


def test_fails(desktop, agent):
    desktop.move_mouse((10, 20))
    desktop.screenshot(width=640)
    assert agent.tasks() == [], "tasks were cleared"
    assert desktop.cursor_position() == (11, 20), "the pointer is elsewhere"
"""


def sandbox_processes() -> list[str]:
    """Processes of any sandbox of this test's (their command lines name its temporary directory)."""
    return [
        processes.describe(pid)
        for pid in processes.descendants(1)
        if "deskpilot-sandbox-" in processes.describe(pid)
    ]


def test_a_suite_with_the_fixtures_passes_fails_with_artifacts_and_leaves_nothing(
    pytester: pytest.Pytester, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    before = sandbox_processes()
    pytester.makepyfile(test_desk=SUITE)
    monkeypatch.setenv("SANDBOX_FILE", str(tmp_path / "sandbox.json"))
    monkeypatch.setenv("PYTHONPATH", str(ROOT))
    artifacts = tmp_path / "artifacts"
    result = pytester.runpytest_subprocess(
        *plugin_args(), "-p", "no:cacheprovider", f"--deskpilot-artifacts={artifacts}",
        f"--junitxml={tmp_path / 'junit.xml'}", timeout=300,
    )  # fmt: skip
    result.assert_outcomes(passed=2, failed=1)

    folder = artifacts / "test_desk.py_test_fails"
    assert sorted(p.name for p in folder.iterdir()) == ["actions.json", "failure.png", "screenshot-1.png"]
    assert (folder / "failure.png").read_bytes()[:4] == b"\x89PNG"
    sent = (folder / "actions.json").read_text()
    assert '"move_mouse"' in sent and '"GET /tasks"' in sent and '"cursor_position"' in sent
    result.stdout.fnmatch_lines(
        ["*deskpilot artifacts*", f"test_desk.py::test_fails: {folder}", "*actions.json*"]
    )
    props = {
        case.get("name"): {p.get("name"): p.get("value") for p in case.iter("property")}
        for case in ET.parse(tmp_path / "junit.xml").iter("testcase")
    }
    assert props["test_fails"] == {"deskpilot_artifacts": str(folder)} and props["test_the_screen"] == {}
    assert not (artifacts / "test_desk.py_test_the_screen").exists()

    desktop_url, agent_url = json.loads((tmp_path / "sandbox.json").read_text())
    for url in (desktop_url, agent_url):
        with pytest.raises(httpx.ConnectError):
            httpx.get(f"{url}/health", timeout=2)
    assert sandbox_processes() == before


def test_the_example_runs_as_a_team_copies_it(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *plugin_args(), "examples/ci",
         f"--deskpilot-artifacts={tmp_path}"],
        cwd=ROOT, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert "3 passed" in done.stdout
