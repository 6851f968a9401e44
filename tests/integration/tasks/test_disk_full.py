"""The task database's disk runs full, for real: the database on a small tmpfs (SQLite's file, or a
PostgreSQL tablespace), filled through the API (tasks with uploads, messages) and then to the last byte.

Writes answer 507 in the service's error shape and the connection stays open; /health says degraded (503)
and why; reads keep working. Once space is freed, writes succeed again in the same process, and everything
written before, up to the last write that succeeded, is there, byte for byte.
"""

from __future__ import annotations

import base64
import hashlib
import os
import pwd
import sqlite3
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from contextlib import closing, contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pytest

from deskpilot.tasks.storage import MESSAGE, out_of_space
from deskpilot.tasks.store import Store
from testbed.postgres import PostgresServer
from testbed.task_service import serve, with_store

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="mounting a tmpfs needs root")

UPLOAD = 96 * 1024  # bytes per uploaded file: random, so no backend compresses it away
DISK = "4m"


@contextmanager
def small_disk(size: str = DISK) -> Iterator[Path]:
    """A tmpfs of ``size`` mounted on a temporary directory, unmounted afterwards."""
    mountpoint = Path(tempfile.mkdtemp(prefix="deskpilot-disk-"))
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size},mode=0755", "tmpfs", str(mountpoint)],
        capture_output=True,
        text=True,
    )
    if mounted.returncode != 0:
        mountpoint.rmdir()
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.strip()}")
    try:
        yield mountpoint
    finally:
        subprocess.run(["umount", str(mountpoint)], check=True)
        mountpoint.rmdir()


def fill(disk: Path) -> Path:
    """Take every byte still free on ``disk``; returns the file holding them."""
    filler = disk / "filler"
    with filler.open("wb", buffering=0) as f:
        for chunk in (1 << 20, 64 << 10, 4 << 10, 512, 1):
            try:
                while True:
                    f.write(b"\0" * chunk)
            except OSError as exc:
                assert out_of_space(exc), exc  # the file system's own ENOSPC is recognised as such
    assert os.statvfs(disk).f_bavail == 0
    return filler


@dataclass
class Written:
    """What the API acknowledged: every task and upload that got 201, and its messages' texts."""

    files: dict[str, dict[str, str]] = field(default_factory=dict)  # task id -> file name -> sha256
    messages: dict[str, list[str]] = field(default_factory=dict)  # task id -> texts, the description first

    def create(self, api: httpx.Client, *, multipart: bool) -> httpx.Response:
        data = os.urandom(UPLOAD)
        name = f"upload-{uuid.uuid4().hex[:8]}.bin"
        description = f"keep {name}"
        if multipart:
            r = api.post("/tasks", data={"description": description}, files=[("files", (name, data))])
        else:
            encoded = base64.b64encode(data).decode()
            r = api.post(
                "/tasks", json={"description": description, "files": [{"name": name, "data": encoded}]}
            )
        if r.status_code == 201:
            self.files[r.json()["id"]] = {name: hashlib.sha256(data).hexdigest()}
            self.messages[r.json()["id"]] = [description]
        return r

    def message(self, api: httpx.Client, task_id: str) -> httpx.Response:
        text = f"note {uuid.uuid4().hex}"
        r = api.post(f"/tasks/{task_id}/messages", json={"content": text})
        if r.status_code == 201:
            self.messages[task_id].append(text)
        return r


def assert_full(r: httpx.Response) -> None:
    assert r.status_code == 507, (r.status_code, r.text)
    assert r.json() == {"statusCode": 507, "message": MESSAGE, "error": "Insufficient Storage"}


def stored(db_url: str) -> tuple[dict[str, dict[str, str]], dict[str, list[str]]]:
    """Every task's files (name -> sha256 of the bytes stored) and message texts, read by another
    connection."""

    async def read(store: Store) -> tuple[dict[str, dict[str, str]], dict[str, list[str]]]:
        files: dict[str, dict[str, str]] = {}
        messages: dict[str, list[str]] = {}
        tasks, _ = await store.list_tasks(limit=10_000)
        for task in tasks:
            files[task.id] = {
                f.name: hashlib.sha256(f.data).hexdigest() for f in await store.pending_files(task.id)
            }
            _, conversation, _ = await store.get_task_detail(task.id)
            messages[task.id] = [m.content[0]["text"] for m in conversation]
        return files, messages

    result: tuple[dict[str, dict[str, str]], dict[str, list[str]]] = with_store(db_url, read)
    return result


def exercise(api: httpx.Client, disk: Path, db_url: str) -> None:
    written = Written()
    # what the operator will free: something else on the same disk (logs, say)
    ballast = disk / "ballast"
    ballast.write_bytes(b"\0" * (1 << 20))
    # the database's own writes fill the disk: tasks with uploads, as JSON and as multipart
    for i in range(200):
        r = written.create(api, multipart=i % 2 == 1)
        if r.status_code != 201:
            break
    assert_full(r)
    assert len(written.files) >= 3, "the disk filled before anything was written: make it larger"
    # the connection stayed open: the same client goes on (a dropped one would raise here)
    assert api.get("/tasks", params={"limit": 1}).status_code == 200

    # then the last free byte goes, and every kind of write is refused (a small one may still fit in
    # space the database had already taken, until that is used up too)
    filler = fill(disk)
    assert_full(written.create(api, multipart=False))
    assert_full(written.create(api, multipart=True))
    first = next(iter(written.files))
    for _ in range(500):
        r = written.message(api, first)
        if r.status_code != 201:
            break
    assert_full(r)

    health = api.get("/health")
    assert health.status_code == 503, health.text
    body = health.json()
    assert body["status"] == "degraded"
    assert body["problems"]["storage"].startswith("out of disk space: a write failed"), body
    assert "507" in body["problems"]["storage"]

    # reads work on a full disk: the list, each task, its messages
    listed = api.get("/tasks", params={"limit": 1000})
    assert listed.status_code == 200 and {t["id"] for t in listed.json()} == set(written.files)
    for task_id, files in written.files.items():
        detail = api.get(f"/tasks/{task_id}").json()
        assert {f["name"]: f["size"] for f in detail["files"]} == dict.fromkeys(files, UPLOAD)

    # space comes back: the same process writes again, and /health says so
    filler.unlink()
    ballast.unlink()
    assert written.create(api, multipart=True).status_code == 201
    assert written.message(api, first).status_code == 201
    health = api.get("/health")
    assert health.status_code == 200 and health.json()["status"] == "ok" and "problems" not in health.json()

    # nothing acknowledged was lost, nothing refused was half-written
    kept_files, messages = stored(db_url)
    assert kept_files == written.files
    assert messages == written.messages


@pytest.fixture
def sqlite_on_small_disk() -> Iterator[tuple[str, Path]]:
    with small_disk() as disk:
        yield f"sqlite:///{disk}/agent.db", disk


def test_a_full_disk_under_sqlite_refuses_writes_with_507_and_loses_nothing(
    sqlite_on_small_disk: tuple[str, Path],
) -> None:
    db_url, disk = sqlite_on_small_disk
    with serve(db_url) as api:
        exercise(api, disk, db_url)
    with closing(sqlite3.connect(disk / "agent.db")) as check:
        assert check.execute("PRAGMA integrity_check").fetchone() == ("ok",)


@pytest.fixture
def postgres_on_small_disk(pg_server: PostgresServer) -> Iterator[tuple[str, Path]]:
    """A database whose tables (created by the migrations) live in a tablespace on the tmpfs; PostgreSQL's
    own files (its WAL) stay on the main disk."""
    url = pg_server.create_database("full")
    name = url.rsplit("/", 1)[1]
    space = f"small_{name}"
    with small_disk() as disk:
        tablespace = disk / "pg"
        tablespace.mkdir(mode=0o700)
        postgres = pwd.getpwnam(pg_server.user)
        os.chown(tablespace, postgres.pw_uid, postgres.pw_gid)
        pg_server.execute(f"CREATE TABLESPACE {space} LOCATION '{tablespace}'")
        pg_server.execute(f'ALTER DATABASE "{name}" SET default_tablespace = {space}')
        try:
            yield url, disk
        finally:
            pg_server.execute(f'DROP DATABASE "{name}" WITH (FORCE)')
            pg_server.execute(f"DROP TABLESPACE {space}")


@pytest.mark.postgres
def test_a_full_disk_under_postgresql_refuses_writes_with_507_and_loses_nothing(
    postgres_on_small_disk: tuple[str, Path],
) -> None:
    db_url, disk = postgres_on_small_disk
    with serve(db_url) as api:
        exercise(api, disk, db_url)


def test_what_counts_as_out_of_space() -> None:
    """The drivers' own errors, raised for real: SQLite's SQLITE_FULL on a full tmpfs, and what is not."""
    with small_disk("64k") as disk, closing(sqlite3.connect(disk / "t.db", isolation_level=None)) as db:
        db.execute("CREATE TABLE t (b BLOB)")
        with pytest.raises(sqlite3.OperationalError) as full:
            while True:
                db.execute("INSERT INTO t VALUES (?)", (os.urandom(4096),))
        assert out_of_space(full.value)
        with pytest.raises(sqlite3.OperationalError) as other:
            db.execute("SELECT * FROM no_such_table")
        assert not out_of_space(other.value)
    assert not out_of_space(FileNotFoundError(2, "missing"))
    try:
        raise RuntimeError("wrapped") from OSError(28, "No space left on device")
    except RuntimeError as wrapped:
        assert out_of_space(wrapped)
