"""The task service's variables are TASKS_* (AGENT_* in 0.1, the agent loop's prefix): the old names are still
read, below the new ones, and named in a warning; nothing of the project itself uses them any more."""

from __future__ import annotations

import logging
import re
import subprocess
from pathlib import Path

import pytest

from deskpilot.config import (
    OLD_TASKS_PREFIX,
    RENAMED,
    TaskSettings,
    UISettings,
    log_renamed_variables,
    renamed_variables,
)

ROOT = Path(__file__).resolve().parents[2]
OLD_NAMES = sorted(
    {f"{OLD_TASKS_PREFIX}{name.upper()}" for name in TaskSettings.model_fields}
    | set(RENAMED)
    | {"DESKPILOT_AGENT_RUNS_AS", "agent-api"}  # the launcher's own, and the supervisor program's name
)
# where an old name may still be written: what reads it, and what says it was renamed
READERS = {
    "deskpilot/config.py",
    "scripts/appliance.sh",
    "scripts/install-system.sh",
    "docs/operations.md",
    "CHANGELOG.md",
    "tests/unit/test_renamed_settings.py",
}


@pytest.fixture
def environ(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    for name in (*OLD_NAMES, "TASKS_PORT", "TASKS_MAX_FILES", "UI_TASKS_URL", "DATABASE_URL"):
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


def test_an_old_name_is_read_below_the_new_one(environ: pytest.MonkeyPatch) -> None:
    environ.setenv("AGENT_PORT", "1234")
    environ.setenv("AGENT_MAX_FILES", "9")
    environ.setenv("TASKS_MAX_FILES", "3")
    environ.setenv("UI_AGENT_URL", "http://tasks.example:9991")
    settings = TaskSettings()
    assert (settings.port, settings.max_files) == (1234, 3)
    assert UISettings().tasks_url == "http://tasks.example:9991"
    assert renamed_variables() == [("AGENT_PORT", "TASKS_PORT"), ("UI_AGENT_URL", "UI_TASKS_URL")]


def test_each_old_name_read_is_named_in_a_warning(
    environ: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    environ.setenv("AGENT_WORKER_ENABLED", "false")
    environ.setenv("AGENT_MODEL", "openai/gpt-4o")  # the agent loop's: not renamed
    with caplog.at_level(logging.WARNING):
        log_renamed_variables(logging.getLogger("test"))
    assert [r.getMessage().split()[0] for r in caplog.records] == ["AGENT_WORKER_ENABLED"]
    assert "TASKS_WORKER_ENABLED" in caplog.records[0].getMessage()


def test_the_project_writes_only_the_new_names() -> None:
    files = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True)
    # ENV_AGENT_PORT (supervisord's) too, so a name may follow an underscore
    pattern = re.compile(r"(?<![A-Za-z0-9])(" + "|".join(OLD_NAMES) + r")(?![A-Za-z0-9])")
    found = {
        name: sorted(set(pattern.findall(text)))
        for name in files.stdout.split()
        if name not in READERS and (ROOT / name).is_file()
        for text in [(ROOT / name).read_text(errors="replace")]
        if pattern.search(text)
    }
    assert found == {}, "old names still written (use TASKS_*, UI_TASKS_URL, DESKPILOT_TASKS_USER)"
