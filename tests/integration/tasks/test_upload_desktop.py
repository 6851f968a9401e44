"""Files uploaded with a task land on a real desktop (the desktop service on a private Xvfb, its files in a
private directory owned by the desktop user) before the executor's first step."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from deskpilot.config import DesktopSettings
from deskpilot.taskapi.types import TaskStatus
from deskpilot.tasks.executor import TaskContext
from testbed.desktop_files import private_files_dir, real_desktop
from testbed.net import ServerThread
from testbed.task_service import serve
from testbed.timing import wait_until
from testbed.xvfb import Display


class ReadBack:
    """Reads every uploaded file back through the desktop API at its first step, then completes."""

    def __init__(self) -> None:
        self.seen: dict[str, bytes] = {}

    async def execute(self, task_id: str, ctx: TaskContext) -> None:
        _, _, files = await ctx.store.get_task_detail(task_id)
        for f in files:
            self.seen[f.desktop_path] = await ctx.desktop.read_file(f.desktop_path)
        await ctx.update(status=TaskStatus.COMPLETED)


@pytest.fixture
def desktop_files() -> Iterator[Path]:
    with private_files_dir() as path:
        yield path


@pytest.fixture
def desktop_url(display: Display, desktop_files: Path) -> Iterator[str]:
    from deskpilot.desktop.api import create_app as create_desktop_app

    with ServerThread(
        create_desktop_app(DesktopSettings(display=display.name, files_dir=desktop_files))
    ) as desk:
        yield desk.url


def test_uploaded_files_are_written_to_the_desktop_before_the_first_step(
    desktop_url: str, desktop_files: Path, tmp_path: Path
) -> None:
    tag = uuid.uuid4().hex[:8]
    payloads = {
        f"dp-{tag}-notes.txt": b"buy milk\n",
        f"dp-{tag}-pixel.png": bytes(range(256)) * 4,
    }
    written = [desktop_files / name for name in payloads] + [desktop_files / f"dp-{tag}-passwd"]
    executor = ReadBack()
    with serve(
        f"sqlite:///{tmp_path}/agent.db",
        executor,
        worker_enabled=True,
        desktop_url=desktop_url,
        desktop_files_dir=str(desktop_files),
    ) as api:
        files = [("files", (name, data, "application/octet-stream")) for name, data in payloads.items()]
        files.append(("files", (f"../../etc/dp-{tag}-passwd", b"not really", "text/plain")))
        r = api.post("/tasks", data={"description": "look at the files"}, files=files)
        assert r.status_code == 201, r.text
        task_id = r.json()["id"]
        wait_until(lambda: api.get(f"/tasks/{task_id}").json()["status"] == "COMPLETED", 30)
        task = api.get(f"/tasks/{task_id}").json()
    assert all(f["writtenAt"] for f in task["files"])
    for name, data in payloads.items():
        path = desktop_files / name
        assert path.read_bytes() == data
        assert executor.seen[str(path)] == data  # readable through the desktop API at the first step
    assert (desktop_files / f"dp-{tag}-passwd").read_bytes() == b"not really"  # the safe name, not ../../etc
    note = task["messages"][0]["content"][1]["text"]
    assert all(str(p) in note for p in written)
    assert not any((real_desktop() / p.name).exists() for p in written), "a file went to the real ~/Desktop"


LAUNCHER = b"[Desktop Entry]\nType=Application\nName=Terminal\nExec=xfce4-terminal\n"


def test_an_upload_never_replaces_a_file_on_the_desktop(
    desktop_url: str, desktop_files: Path, tmp_path: Path
) -> None:
    """An upload named like the appliance's own launcher lands beside it, and the task is told where."""
    (desktop_files / "terminal.desktop").write_bytes(LAUNCHER)
    executor = ReadBack()
    with serve(
        f"sqlite:///{tmp_path}/agent.db",
        executor,
        worker_enabled=True,
        desktop_url=desktop_url,
        desktop_files_dir=str(desktop_files),
    ) as api:
        files = [("files", ("terminal.desktop", b"Exec=rm -rf ~\n", "application/x-desktop"))]
        r = api.post("/tasks", data={"description": "a launcher"}, files=files)
        assert r.status_code == 201, r.text
        task_id = r.json()["id"]
        wait_until(lambda: api.get(f"/tasks/{task_id}").json()["status"] == "COMPLETED", 30)
        task = api.get(f"/tasks/{task_id}").json()
    assert (desktop_files / "terminal.desktop").read_bytes() == LAUNCHER
    saved = desktop_files / "terminal (2).desktop"
    assert saved.read_bytes() == b"Exec=rm -rf ~\n"
    assert [f["path"] for f in task["files"]] == [str(saved)]
    assert executor.seen == {str(saved): b"Exec=rm -rf ~\n"}
    first, note = task["messages"][0], task["messages"][1]
    assert str(desktop_files / "terminal.desktop") in first["content"][1]["text"]  # announced at creation
    assert (
        note["role"] == "USER"
        and f"- {saved} (not {desktop_files / 'terminal.desktop'})" in (note["content"][0]["text"])
    )


def test_two_tasks_uploading_the_same_name_give_two_files(
    desktop_url: str, desktop_files: Path, tmp_path: Path
) -> None:
    with serve(
        f"sqlite:///{tmp_path}/agent.db",
        ReadBack(),
        worker_enabled=True,
        desktop_url=desktop_url,
        desktop_files_dir=str(desktop_files),
    ) as api:
        ids = []
        for content in (b"%PDF-1 first", b"%PDF-1 second"):
            files = [("files", ("report.pdf", content, "application/pdf"))]
            r = api.post("/tasks", data={"description": "read the report"}, files=files)
            assert r.status_code == 201, r.text
            ids.append(r.json()["id"])
        wait_until(lambda: all(api.get(f"/tasks/{i}").json()["status"] == "COMPLETED" for i in ids), 30)
        paths = [api.get(f"/tasks/{i}").json()["files"][0]["path"] for i in ids]
    assert sorted(paths) == [str(desktop_files / "report (2).pdf"), str(desktop_files / "report.pdf")]
    assert {Path(p).read_bytes() for p in paths} == {b"%PDF-1 first", b"%PDF-1 second"}
    assert sorted(p.name for p in desktop_files.iterdir()) == ["report (2).pdf", "report.pdf"]
