"""write_file / read_file on what is not an ordinary file, file actions side by side, long names."""

from __future__ import annotations

import base64
import contextlib
import errno
import os
import pwd
import socket
import time
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from tests.integration.desktop.conftest import Desktop


@pytest.fixture
def scratch(desktop: Desktop) -> Iterator[tuple[str, Path]]:
    """A unique name prefix in the service's files directory; whatever starts with it is removed after."""
    prefix = f"deskpilot-test-{uuid.uuid4().hex[:8]}"
    root = desktop.controller.hands.root
    yield prefix, root
    for path in root.glob(f"{prefix}*"):
        with contextlib.suppress(OSError):
            path.rmdir() if path.is_dir() and not path.is_symlink() else path.unlink()


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def release_fifo(path: Path) -> None:
    """Open the FIFO's write end once, so a reader stuck opening it (a service before the fix) goes on."""
    try:
        os.close(os.open(path, os.O_WRONLY | os.O_NONBLOCK))
    except OSError as exc:
        if exc.errno != errno.ENXIO:  # ENXIO: nobody is waiting to read it, as it should be
            raise


def test_a_fifo_is_refused_at_once_and_the_next_file_action_runs(desktop: Desktop, scratch) -> None:
    prefix, root = scratch
    fifo = root / f"{prefix}.fifo"
    os.mkfifo(fifo, 0o666)
    try:
        started = time.monotonic()
        r = desktop.http.post(
            f"{desktop.url}/computer-use", json={"action": "read_file", "path": fifo.name}, timeout=5
        )
        assert r.status_code == 400, r.text
        assert time.monotonic() - started < 2
        body = r.json()
        assert body["success"] is False and "FIFO" in body["error"] and body["message"] == body["error"]
        # writing over it is refused the same way; it stays a FIFO
        r = desktop.post(action="write_file", path=fifo.name, data=b64(b"x"))
        assert r.status_code == 400 and "FIFO" in r.json()["error"], r.text
        assert fifo.is_fifo()
        r = desktop.http.post(
            f"{desktop.url}/computer-use",
            json={"action": "write_file", "path": f"{prefix}.txt", "data": b64(b"after the fifo")},
            timeout=5,
        )
        assert r.status_code == 200, r.text
        assert (root / f"{prefix}.txt").read_bytes() == b"after the fifo"
    finally:
        release_fifo(fifo)


@pytest.mark.parametrize(
    ("path", "kind"),
    [("/dev/zero", "character device"), ("/dev/null", "character device"), ("/", "directory")],
)
def test_devices_and_directories_are_not_read(desktop: Desktop, path: str, kind: str) -> None:
    r = desktop.post(action="read_file", path=path)
    assert r.status_code == 400, r.text
    assert kind in r.json()["error"] and "regular file" in r.json()["error"]


def test_a_socket_is_not_read(desktop: Desktop, scratch) -> None:
    prefix, root = scratch
    with socket.socket(socket.AF_UNIX) as server:
        server.bind(str(root / f"{prefix}.sock"))
        server.listen()
        r = desktop.post(action="read_file", path=f"{prefix}.sock")
    assert r.status_code == 400 and "not a regular file" in r.json()["error"], r.text


def fsuids(pid: int) -> list[int]:
    """The filesystem uid of each thread of a process (the 4th field of its ``Uid:`` line)."""
    out = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        with contextlib.suppress(FileNotFoundError):  # a thread that ended meanwhile
            for line in (task / "status").read_text().splitlines():
                if line.startswith("Uid:"):
                    out.append(int(line.split()[4]))
    return out


def test_file_actions_run_side_by_side_on_the_desktop_users_threads(desktop: Desktop, scratch) -> None:
    prefix, root = scratch
    big = os.urandom(desktop.controller.hands.max_bytes)
    (root / f"{prefix}-big.bin").write_bytes(big)

    def read_big(_: int) -> bytes:
        r = desktop.post(action="read_file", path=f"{prefix}-big.bin")
        assert r.status_code == 200, r.text
        return base64.b64decode(r.json()["data"])

    def write_small(i: int) -> None:
        r = desktop.post(action="write_file", path=f"{prefix}-{i}.txt", data=b64(str(i).encode()))
        assert r.status_code == 200, r.text

    with ThreadPoolExecutor(16) as pool:
        reads = [pool.submit(read_big, i) for i in range(8)]
        writes = [pool.submit(write_small, i) for i in range(8)]
        assert all(f.result(timeout=60) == big for f in reads)
        for f in writes:
            f.result(timeout=60)
    assert all((root / f"{prefix}-{i}.txt").read_bytes() == str(i).encode() for i in range(8))
    if os.geteuid() == 0:  # the service dropped its rights: more than one thread acts as the desktop user
        uid = pwd.getpwnam(desktop.controller.settings.user).pw_uid
        assert fsuids(os.getpid()).count(uid) > 1


def name_of(prefix: str, size: int) -> str:
    """A name of ``size`` bytes in UTF-8, with two-byte characters in it."""
    stem = prefix + "é" * ((size - len(prefix) - 4) // 2)
    name = stem + "x" * (size - 4 - len(stem.encode())) + ".txt"
    assert len(name.encode()) == size
    return name


@pytest.mark.parametrize("size", [242, 255])
def test_names_up_to_255_bytes_are_written_and_read_back(desktop: Desktop, scratch, size: int) -> None:
    prefix, root = scratch
    name = name_of(prefix, size)
    body = desktop.act(action="write_file", path=name, data=b64(b"long name"))
    assert str(root / name) in body["message"]
    assert base64.b64decode(desktop.act(action="read_file", path=name)["data"]) == b"long name"
    assert not [p for p in root.iterdir() if p.name.endswith(".tmp")]


def test_a_name_over_255_bytes_is_refused(desktop: Desktop, scratch) -> None:
    prefix, root = scratch
    r = desktop.post(action="write_file", path=name_of(prefix, 256), data=b64(b"too long"))
    assert r.status_code == 400 and "too long" in r.json()["error"], r.text
    assert not [p for p in root.iterdir() if p.name.endswith(".tmp")]


def test_write_without_overwrite_never_replaces_a_file(desktop: Desktop, scratch) -> None:
    prefix, root = scratch
    name = f"{prefix}.txt"
    desktop.act(action="write_file", path=name, data=b64(b"first"), overwrite=False)
    r = desktop.post(action="write_file", path=name, data=b64(b"second"), overwrite=False)
    assert r.status_code == 409, r.text
    body = r.json()
    assert body["success"] is False and "already exists" in body["error"] and body["message"] == body["error"]
    assert (root / name).read_bytes() == b"first"
    desktop.act(action="write_file", path=name, data=b64(b"third"))  # the default replaces (the spec)
    assert (root / name).read_bytes() == b"third"
    (root / f"{prefix}-link").symlink_to(root / f"{prefix}-nowhere")  # a name taken by a dangling link
    r = desktop.post(action="write_file", path=f"{prefix}-link", data=b64(b"x"), overwrite=False)
    assert r.status_code == 409, r.text
    r = desktop.post(action="write_file", path=name, data=b64(b"x"), overwrite="false")
    assert r.status_code == 400 and "overwrite" in r.json()["error"], r.text
    assert not [p for p in root.iterdir() if p.name.endswith(".tmp")]
    schema = desktop.http.get(f"{desktop.url}/openapi.json").json()
    assert "409" in schema["paths"]["/computer-use"]["post"]["responses"]


def test_one_of_concurrent_writes_without_overwrite_creates_the_file(desktop: Desktop, scratch) -> None:
    prefix, root = scratch

    def write(i: int) -> int:
        r = desktop.post(action="write_file", path=f"{prefix}.txt", data=b64(b"%d" % i), overwrite=False)
        return r.status_code

    with ThreadPoolExecutor(8) as pool:
        statuses = list(pool.map(write, range(8)))
    assert sorted(statuses) == [200] + [409] * 7
    assert (root / f"{prefix}.txt").read_bytes() == b"%d" % statuses.index(200)
