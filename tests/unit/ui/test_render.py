"""A task's result reads as text: the agent's description, or the shape's content in plain lines."""

from __future__ import annotations

import pytest

from deskpilot.ui.render import result_text, task_state


@pytest.mark.parametrize(
    ("result", "text"),
    [
        (None, ""),
        ({"description": "Saved report.pdf"}, "Saved report.pdf"),
        ("plain words", "plain words"),
        ({"description": "Done", "files": 2}, "Done\nfiles: 2"),
        ({"total": 42, "path": "/tmp/out.csv", "ok": True}, "total: 42\npath: /tmp/out.csv\nok: true"),
        (["a.txt", {"b": 1}], '- a.txt\n- {"b": 1}'),
        (3.5, "3.5"),
    ],
)
def test_result_text(result: object, text: str) -> None:
    assert result_text(result) == text


def test_a_task_state_has_no_messages_and_its_result_as_text() -> None:
    task = {"id": "t", "status": "COMPLETED", "result": {"description": "ok"}, "messages": [{}], "files": []}
    assert task_state(task) == {
        "id": "t",
        "status": "COMPLETED",
        "result": {"description": "ok"},
        "resultText": "ok",
    }
