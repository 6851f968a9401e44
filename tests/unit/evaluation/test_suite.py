"""Task files: what validates, what is refused (with the file and the field named), and how texts match."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from deskpilot.client import Sandbox
from deskpilot.evaluation.runner import CannotRun, TaskResult, over_budget, run_suite
from deskpilot.evaluation.suite import SuiteError, TextMatch, load_suite

TASK = """
instruction: Save a note.
checks:
  - file: {path: Desktop/note.txt, contains: done}
"""


def write(folder: Path, name: str, text: str) -> Path:
    folder.mkdir(exist_ok=True)
    (folder / name).write_text(text)
    return folder


def test_a_folder_is_its_task_files_in_name_order_with_ids_from_file_names(tmp_path: Path) -> None:
    write(tmp_path, "b.yaml", TASK)
    write(tmp_path, "a.yaml", "id: first\n" + TASK)
    tasks = load_suite(tmp_path)
    assert [t.id for t in tasks] == ["first", "b"]
    assert tasks[0].budget.steps == 30 and tasks[0].setup.files == []


@pytest.mark.parametrize(
    ("text", "says"),
    [
        (TASK + "colour: red\n", "colour: Extra inputs are not permitted"),
        ("instruction: x\nchecks: []\n", "checks: List should have at least 1 item"),
        ("instruction: x\nchecks: [{file: {path: a}, window: {title: b}}]\n", "exactly one of"),
        ("instruction: x\nchecks: [{command: {run: ls, matches: '('}}]\n", "not a regular expression"),
        ("instruction: x\nchecks: [{file: {path: a}}]\nsetup: {applications: [paint]}\n", "applications.0"),
        ("- just a list\n", "a task file is a mapping"),
        ("instruction: [unclosed\n", "yaml"),
    ],
)
def test_a_bad_task_file_is_refused_naming_the_file_and_the_field(
    tmp_path: Path, text: str, says: str
) -> None:
    write(tmp_path, "bad.yaml", text)
    with pytest.raises(SuiteError) as err:
        load_suite(tmp_path)
    assert "bad.yaml" in str(err.value) and says.lower() in str(err.value).lower()


def test_two_tasks_of_one_name_and_an_empty_folder_are_refused(tmp_path: Path) -> None:
    with pytest.raises(SuiteError, match="no task files"):
        load_suite(write(tmp_path, "notes.txt", ""))
    write(tmp_path, "a.yaml", "id: same\n" + TASK)
    write(tmp_path, "b.yaml", "id: same\n" + TASK)
    with pytest.raises(SuiteError, match="two tasks are called 'same'"):
        load_suite(tmp_path)


def test_a_text_equals_contains_or_matches() -> None:
    assert TextMatch(equals="12").problem("12") is None
    assert TextMatch(equals="12").problem("12\n") == "is '12\\n', not '12'"
    assert TextMatch(contains="Anna").problem("call Anna") is None
    assert TextMatch(matches=r"^\s*12\s*$").problem("x\n 12 \n") is None
    assert "does not match" in (TextMatch(matches=r"^12$").problem("13") or "")


def test_a_token_budget_fails_a_task_that_spends_more(tmp_path: Path) -> None:
    (tmp_path / "t.yaml").write_text(
        "instruction: x\nchecks: [{clipboard: {equals: x}}]\nbudget: {steps: 5, tokens: 1000}\n"
    )
    [task] = load_suite(tmp_path)
    within = TaskResult("t", "x", True, "COMPLETED", 1.0, 5, tokens=1000)
    over = TaskResult("t", "x", True, "COMPLETED", 1.0, 5, tokens=1001)
    assert over_budget(task, within) == ""
    assert over_budget(task, over) == "1001 tokens, over the budget of 1000"
    assert (
        over_budget(task, TaskResult("t", "x", True, "COMPLETED", 1.0, 6)) == "6 steps, over the budget of 5"
    )


def test_jobs_start_their_sandboxes_together_and_none_without_a_task(tmp_path: Path) -> None:
    write(tmp_path, "a.yaml", TASK)
    write(tmp_path, "b.yaml", TASK)
    opened: list[str] = []
    # each start waits for the other: a job that started only once the one before was ready would never come
    # (the barrier breaks, and run_suite raises that instead)
    together = threading.Barrier(2, timeout=10)

    @contextlib.contextmanager
    def box() -> Iterator[Sandbox]:
        opened.append(threading.current_thread().name)
        together.wait()
        raise CannotRun("no appliance here")
        yield

    with pytest.raises(CannotRun):
        run_suite("two", load_suite(tmp_path), box, None, jobs=5)
    assert sorted(opened) == ["eval-job-0", "eval-job-1"]  # two tasks: two sandboxes of the five jobs
