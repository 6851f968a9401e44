"""One result, three reports that say the same: JSON, Markdown, HTML (escaped)."""

from __future__ import annotations

import json
from pathlib import Path

from deskpilot.evaluation.checks import CheckResult
from deskpilot.evaluation.report import write_reports
from deskpilot.evaluation.runner import SuiteResult, TaskResult


def test_the_three_reports(tmp_path: Path) -> None:
    ok = TaskResult(
        "note", "Save", True, "COMPLETED", 1.5, 2, [CheckResult("file a", True)], "t1", "", "http://x/t1"
    )
    ok.tokens = 1234
    bad = TaskResult(
        "bad-one", "<b>", False, "COMPLETED", 3.0, 4, [CheckResult("file <c>", False, "does not exist")], "t2"
    )
    result = SuiteResult("smoke", "local/m", "2026-11-24T00:00:00+00:00", [ok, bad])
    paths = write_reports(result, tmp_path / "out")
    assert [p.name for p in paths] == ["report.json", "report.md", "report.html"]
    data = json.loads(paths[0].read_text())
    assert (data["passed"], data["total"], data["score"]) == (1, 2, 0.5)
    assert data["tasks"][1]["checks"][0] == {"check": "file <c>", "passed": False, "detail": "does not exist"}
    md = paths[1].read_text()
    assert md.startswith("# smoke: 1/2 passed (50%)")
    assert "| note | pass | COMPLETED | 1.5 s | 2 | 1234 |  | [download](http://x/t1) |" in md
    assert "| bad-one | **fail** | COMPLETED | 3.0 s | 4 | 0 | file <c>: does not exist |  |" in md
    assert data["tasks"][0]["tokens"] == 1234
    assert "file <c>: does not exist" in md
    page = paths[2].read_text()
    assert "<td>2</td><td>1234</td>" in page
    assert "<td>file &lt;c&gt;: does not exist</td>" in page and "<b>" not in page.split("<table>")[1]
