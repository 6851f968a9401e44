"""One result, three reports that say the same: JSON, Markdown, HTML (escaped); each task's kept trajectory
linked relative to the report, its frames written beside it for the step viewer."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import orjson

from deskpilot.evaluation.checks import CheckResult
from deskpilot.evaluation.report import write_reports
from deskpilot.evaluation.runner import SuiteResult, TaskResult

PNG = b"\x89PNG\r\n\x1a\n" + b"frame"  # the report copies frames as they are


def trajectory(path: Path) -> Path:
    """A kept trajectory of two steps: the agent's click (frames before and after), a human's keys."""
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = [
        {"format": "deskpilot-trajectory/1", "task": {}, "screen": {}, "steps": 2, "truncated": None},
        {
            "step": 1,
            "time": "2026-11-24T00:00:01+00:00",
            "actor": "agent",
            "action": {"action": "click_mouse", "coordinates": {"x": 10, "y": 20}, "button": "left"},
            "outcome": {"error": False, "text": ""},
            "frameBefore": None,
            "frameAfter": "aaa",
            "replay": True,
        },
        {
            "step": 2,
            "time": "2026-11-24T00:00:02+00:00",
            "actor": "human",
            "action": {"action": "type_keys", "keys": ["Return"]},
            "outcome": {"error": True, "text": "<refused>"},
            "frameBefore": "aaa",
            "frameAfter": "bbb",
            "replay": True,
        },
    ]
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("trajectory.jsonl", b"\n".join(orjson.dumps(line) for line in lines) + b"\n")
        z.writestr("frames/aaa.png", PNG + b"a")
        z.writestr("frames/bbb.png", PNG + b"b")
    return path


def test_the_three_reports(tmp_path: Path) -> None:
    out = tmp_path / "out"
    kept = trajectory(out / "trajectories" / "note.zip")
    ok = TaskResult(
        "note", "Save", True, "COMPLETED", 1.5, 2, [CheckResult("file a", True)], "t1", "", str(kept)
    )
    ok.tokens, ok.model, ok.words = 1234, "local/m", ["I click <the> button"]
    bad = TaskResult(
        "bad-one", "<b>", False, "COMPLETED", 3.0, 4, [CheckResult("file <c>", False, "does not exist")], "t2"
    )
    bad.error = "setup said:\nline two | and a pipe"
    result = SuiteResult("smoke", "local/m", "2026-11-24T00:00:00+00:00", [ok, bad], seconds=12.5, jobs=2)
    paths = write_reports(result, out)
    assert [p.name for p in paths] == ["report.json", "report.md", "report.html"]

    data = json.loads(paths[0].read_text())
    assert (data["passed"], data["total"], data["score"], data["jobs"]) == (1, 2, 0.5, 2)
    assert data["tasks"][1]["checks"][0] == {"check": "file <c>", "passed": False, "detail": "does not exist"}
    assert data["tasks"][0]["trajectory"] == "trajectories/note.zip"  # relative to the report
    assert data["tasks"][0]["model"] == "local/m" and data["tasks"][0]["tokens"] == 1234

    md = paths[1].read_text()
    assert md.startswith(
        "# smoke: 1/2 passed (50%)\n\nModel `local/m`, started 2026-11-24T00:00:00+00:00 in 12.5 s"
    )
    assert "| note | pass | COMPLETED | 1.5 s | 2 | 1234 |  | [zip](trajectories/note.zip) |" in md
    # a line break in a cell stays in its row; a pipe is escaped
    why = "setup said:<br>line two \\| and a pipe; file <c>: does not exist"
    assert f"| bad-one | **fail** | COMPLETED | 3.0 s | 4 | 0 | {why} |  |\n" in md
    assert len([line for line in md.splitlines() if line.startswith("|")]) == 4  # head, rule, two tasks

    page = paths[2].read_text()
    assert "<td>2</td><td>1234</td>" in page
    assert "file &lt;c&gt;" in page and "<b>" not in page.split("<body>")[1]
    # the step viewer: the frames written beside the report, linked relative to it
    assert (out / "frames" / "note" / "aaa.png").read_bytes() == PNG + b"a"
    assert (out / "frames" / "note" / "bbb.png").read_bytes() == PNG + b"b"
    assert 'src="frames/note/aaa.png"' in page and 'src="frames/note/bbb.png"' in page
    assert "I click &lt;the&gt; button" in page  # the model's words, with its own step only
    assert page.count('class="words"') == 1
    assert "refused: &lt;refused&gt;" in page
    assert 'href="trajectories/note.zip"' in page
