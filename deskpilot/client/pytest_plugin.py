"""The pytest plugin (entry point ``pytest11``): a real desktop for a test in three lines.

    def test_terminal(desktop):
        desktop.application("terminal")
        assert desktop.screenshot().size == (1920, 1080)

Fixtures: ``deskpilot_sandbox`` (one appliance per session: a native sandbox, ``--deskpilot-image`` or
``--deskpilot-url``), ``desktop`` and ``agent`` (its clients, the state clean before each test: tasks
deleted, applications closed, the home back to its skeleton), ``deskpilot_settings`` (override it in a
conftest.py to give the appliance variables, e.g. a scripted model's). When a test that used them fails, its
last screenshots, one taken at the failure and the list of what it sent are saved under
``--deskpilot-artifacts`` and named in the JUnit XML (property ``deskpilot_artifacts``) and the terminal
summary. Under pytest-xdist each worker is a session of its own: one sandbox per worker, and the summary is
made from the reports the workers send.
"""

from __future__ import annotations

import json
import re
from collections.abc import Generator, Iterator
from pathlib import Path
from typing import Any

import pytest

from deskpilot.client.agent import Agent
from deskpilot.client.recording import Record, RecordingAgent, RecordingDesktop
from deskpilot.client.sandboxes import Sandbox, sandbox
from deskpilot.computer.client import Desktop
from deskpilot.errors import ClientError

RECORD = pytest.StashKey[Record]()
ARTIFACTS = "deskpilot_artifacts"  # the property of a failed test's report naming its folder


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("deskpilot", "Deskpilot sandboxes")
    group.addoption(
        "--deskpilot-url",
        help="use the appliance whose desktop service is here (the task service: next port)",
    )
    group.addoption("--deskpilot-image", help="start the sandbox from this container image")
    group.addoption("--deskpilot-token", help="the appliance's token (default: $DESKPILOT_TOKEN with a URL)")
    group.addoption(
        "--deskpilot-artifacts",
        default="deskpilot-artifacts",
        help="where a failed test's screenshots and action log go (default: %(default)s)",
    )


@pytest.fixture(scope="session")
def deskpilot_settings() -> dict[str, str]:
    """More variables for the appliance a native or image sandbox starts (docs/operations.md)."""
    return {}


@pytest.fixture(scope="session")
def deskpilot_sandbox(
    request: pytest.FixtureRequest, pytestconfig: pytest.Config, deskpilot_settings: dict[str, str]
) -> Iterator[Sandbox]:
    """The session's sandbox: with its task service when a collected test takes ``agent`` (else it starts
    at ``agent``'s first use), its UI when asked (``deskpilot_sandbox.start("ui")``)."""
    option = pytestconfig.getoption
    takes_agent = any("agent" in getattr(item, "fixturenames", ()) for item in request.session.items)
    with sandbox(
        url=option("deskpilot_url"),
        image=option("deskpilot_image"),
        token=option("deskpilot_token"),
        settings=deskpilot_settings,
        services=("desktop", "tasks") if takes_agent else ("desktop",),
    ) as box:
        yield box


@pytest.fixture
def _deskpilot_record(request: pytest.FixtureRequest, deskpilot_sandbox: Sandbox) -> Record:
    """A clean appliance for this test, and the record of what it sends."""
    deskpilot_sandbox.reset()
    record = request.node.stash[RECORD] = Record()
    return record


@pytest.fixture
def desktop(deskpilot_sandbox: Sandbox, _deskpilot_record: Record) -> Iterator[Desktop]:
    with RecordingDesktop(
        deskpilot_sandbox.desktop_url, deskpilot_sandbox.token, _deskpilot_record
    ) as client:
        yield client


@pytest.fixture
def agent(deskpilot_sandbox: Sandbox, _deskpilot_record: Record) -> Iterator[Agent]:
    deskpilot_sandbox.start("tasks")  # taken by getfixturevalue: not seen at collection
    with RecordingAgent(deskpilot_sandbox.agent_url, deskpilot_sandbox.token, _deskpilot_record) as client:
        yield client


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    record = item.stash.get(RECORD, None)
    if report.failed and record is not None and report.when in ("setup", "call"):
        folder = save_artifacts(item, record)
        item.user_properties.append((ARTIFACTS, str(folder)))
        report.user_properties.append((ARTIFACTS, str(folder)))
    return report


def save_artifacts(item: pytest.Item, record: Record) -> Path:
    """The test's folder: actions.json, its last screenshots and one of the screen at the failure."""
    root = Path(item.config.getoption("deskpilot_artifacts"))
    folder = (root if root.is_absolute() else item.config.rootpath / root) / _folder_name(item.nodeid)
    folder.mkdir(parents=True, exist_ok=True)
    for n, shot in enumerate(record.screenshots, start=1):
        (folder / f"screenshot-{n}.{_extension(shot.media_type)}").write_bytes(shot)
    box: Sandbox | None = getattr(item, "funcargs", {}).get("deskpilot_sandbox")
    if box is not None:
        try:
            (folder / "failure.png").write_bytes(box.desktop.screenshot())
        except ClientError as exc:
            record.add("desktop", "screenshot at the failure", None, str(exc))
    (folder / "actions.json").write_text(json.dumps(record.sent, indent=1, default=str))
    return folder


def _folder_name(nodeid: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", nodeid).strip("_")[:150]


def _extension(media_type: str) -> str:
    return {"image/jpeg": "jpg", "image/webp": "webp"}.get(media_type, "png")


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    """The failed tests' folders, from their reports: those of this process or of pytest-xdist's workers."""
    reports = [r for key in ("failed", "error") for r in terminalreporter.stats.get(key, [])]
    saved = {
        (r.nodeid, value): None for r in reports for name, value in r.user_properties if name == ARTIFACTS
    }
    if not saved:
        return
    terminalreporter.section("deskpilot artifacts")
    for nodeid, folder in saved:
        terminalreporter.write_line(f"{nodeid}: {folder}")
        terminalreporter.write_line(f"    {', '.join(sorted(p.name for p in Path(folder).iterdir()))}")
