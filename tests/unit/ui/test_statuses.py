"""The task statuses have one home, the task API's enum (deskpilot/taskapi/types.py): the UI's scripts read
them from the page (``STATUS.PENDING`` ...), its Python and templates name the enum's members, and a status
renamed or added there cannot drift from what the UI shows."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from deskpilot.taskapi.types import FINISHED, TaskStatus
from deskpilot.ui.render import STATUS_LABELS, STATUSES

UI = Path(__file__).resolve().parents[3] / "deskpilot" / "ui"
# a status written as a quoted literal ("PENDING", 'FAILED', `NEEDS_HELP`)
STATUS_VALUES = "|".join(s.value for s in TaskStatus)
LITERAL = re.compile(rf"""["'`]({STATUS_VALUES})["'`]""")
SOURCES = sorted([*UI.glob("static/*.js"), *UI.glob("templates/*.html"), *UI.glob("*.py")])


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(UI)))
def test_the_ui_writes_no_status_of_its_own(path: Path) -> None:
    assert not LITERAL.findall(path.read_text()), f"{path.name}: name the status by STATUS.X / TaskStatus.X"


@pytest.mark.parametrize("path", sorted(UI.glob("static/*.js")), ids=lambda p: p.name)
def test_the_scripts_name_only_statuses_the_enum_has(path: Path) -> None:
    named = set(re.findall(r"\bSTATUS\.([A-Za-z_]+)", path.read_text()))
    assert named <= set(TaskStatus.__members__), f"{path.name} names {named - set(TaskStatus.__members__)}"


def test_the_page_carries_every_status_with_its_label() -> None:
    assert STATUSES["each"] == {s.name: s.value for s in TaskStatus}
    assert set(STATUSES["finished"]) == FINISHED
    assert set(STATUS_LABELS) == set(TaskStatus)
