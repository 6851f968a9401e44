"""The desktop user's worker (deskpilot/desktop/handsd.py), run as the desktop user as the appliance runs it,
and the service's side of it (RemoteHands), over its real Unix socket. Root only: it starts the worker as
another user."""

from __future__ import annotations

import asyncio
import os
import pwd
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from deskpilot.config import DesktopSettings
from deskpilot.desktop.command import CommandRequest
from deskpilot.desktop.files import DesktopUser
from deskpilot.desktop.handsd import RemoteHands, hands_for
from deskpilot.errors import FileConflict, FileMissing, HandsUnavailable, TooLarge

DESKTOP_USER = "user"
MAX_BYTES = 1 << 20

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="starts the worker as the desktop user")


def _chown(path: Path, user: pwd.struct_passwd) -> None:
    for p in [path, *path.rglob("*")]:
        os.chown(p, user.pw_uid, user.pw_gid, follow_symlinks=False)


def start_worker(home: Path, socket: Path, peer: str) -> subprocess.Popen[bytes]:
    env = {
        "PATH": "/usr/bin:/bin",
        "HOME": str(home),
        "DESKTOP_USER": DESKTOP_USER,
        "DESKTOP_HOME": str(home),
        "DESKTOP_MAX_FILE_BYTES": str(MAX_BYTES),
        "DESKTOP_DISPLAY": ":9999",
    }
    # runuser sets HOME to the passwd entry's; the appliance's with-env.sh sets it after, as env does here
    argv = ["env", f"HOME={home}", sys.executable, "-m", "deskpilot.desktop.handsd"]
    argv += ["--socket", str(socket), "--peer", peer]
    proc = subprocess.Popen(
        [shutil.which("runuser") or "runuser", "-u", DESKTOP_USER, "--", *argv],
        env=env,
        cwd=Path(__file__).resolve().parents[3],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    deadline = time.monotonic() + 20
    while not socket.exists():
        assert proc.poll() is None, proc.stdout.read().decode() if proc.stdout else ""
        assert time.monotonic() < deadline, "the worker did not listen"
        time.sleep(0.05)
    return proc


@pytest.fixture
def home() -> Iterator[Path]:
    user = pwd.getpwnam(DESKTOP_USER)
    base = Path(tempfile.mkdtemp(prefix="deskpilot-hands-"))
    base.chmod(0o755)
    home = base / "home"
    (home / "Desktop" / "deep").mkdir(parents=True)
    (home / "Desktop" / "deep" / ".deskpilot-0123456789abcdef.tmp").write_bytes(b"half a killed write")
    (home / "Desktop" / "keep.tmp").write_bytes(b"not ours")
    (base / "hands").mkdir()
    _chown(base, user)
    yield home
    shutil.rmtree(base, ignore_errors=True)


@pytest.fixture
def hands(home: Path) -> Iterator[RemoteHands]:
    socket = home.parent / "hands" / "hands.sock"
    proc = start_worker(home, socket, "root")
    try:
        yield RemoteHands(socket, DesktopUser.lookup(DESKTOP_USER, home), None, MAX_BYTES)
    finally:
        proc.terminate()
        proc.wait(10)


def test_the_worker_removes_leftovers_of_killed_writes_as_it_starts(hands: RemoteHands, home: Path) -> None:
    assert not (home / "Desktop" / "deep" / ".deskpilot-0123456789abcdef.tmp").exists()
    assert (home / "Desktop" / "keep.tmp").read_bytes() == b"not ours"


def test_files_are_written_and_read_as_the_desktop_user(hands: RemoteHands, home: Path) -> None:
    async def go() -> None:
        target = await hands.write("notes/a.txt", b"hello")
        assert target == home / "Desktop" / "notes" / "a.txt" and target.owner() == DESKTOP_USER
        content = await hands.read("notes/a.txt")
        assert (content.data, content.name, content.media_type) == (b"hello", "a.txt", "text/plain")
        with pytest.raises(FileConflict):
            await hands.write("notes/a.txt", b"again", overwrite=False)
        with pytest.raises(FileMissing):
            await hands.read("missing.txt")
        with pytest.raises(TooLarge):
            await hands.write("big.bin", bytes(MAX_BYTES + 1))
        with pytest.raises(Exception, match="permission denied"):
            await hands.write("/etc/deskpilot-hands-test", b"root's")

    asyncio.run(go())


def test_commands_and_programs_run_as_the_desktop_user(hands: RemoteHands) -> None:
    async def go() -> None:
        result = await hands.command(CommandRequest(command="id -un; echo $HOME"))
        assert result.exit_code == 0 and result.stdout.splitlines() == [DESKTOP_USER, str(hands.user.home)]
        pid = await hands.launch(["sleep", "30"])
        assert await hands.alive(pid)
        deadline = time.monotonic() + 5
        while hands.on_a_timer([pid]) != {pid}:  # its wait channel, readable by its user only
            assert time.monotonic() < deadline
            await asyncio.sleep(0.05)
        assert hands.waiting([pid])  # its system call and timer likewise: 30 s away
        assert not hands.timer_soon([pid]) and not hands.timer_soon([pid], 550, True)  # 30 s away
        looping = await hands.launch(["python3", "-c", "import select\nwhile True: select.poll().poll(40)"])
        while not hands.timer_soon([looping]):  # a main thread's timer due within 60 ms
            assert time.monotonic() < deadline + 5
            await asyncio.sleep(0.05)
        assert not hands.timer_soon([looping], 20)  # the horizon asked goes to the worker
        await hands.stop([pid, looping])
        assert not await hands.alive(pid)

    asyncio.run(go())


def test_a_program_that_exits_at_once_is_waited_for(hands: RemoteHands) -> None:
    """A launcher that hands its window to a running instance exits at once: no zombie under the worker."""

    pid = asyncio.run(hands.launch(["true"]))
    deadline = time.monotonic() + 5
    while Path(f"/proc/{pid}").exists():  # a zombie keeps its /proc entry until it is waited for
        assert time.monotonic() < deadline, f"{pid} was not waited for"
        time.sleep(0.05)


def test_the_home_is_reset_to_a_skeleton(hands: RemoteHands, home: Path) -> None:
    skeleton = home.parent / "skeleton"
    (skeleton / ".config").mkdir(parents=True)
    (skeleton / ".config" / "app.conf").write_text("x = 1\n")
    _chown(skeleton, pwd.getpwnam(DESKTOP_USER))
    removed = asyncio.run(hands.reset_home(skeleton))
    assert removed >= 2  # deep/, keep.tmp
    assert (home / ".config" / "app.conf").read_text() == "x = 1\n"
    assert sorted(p.name for p in home.iterdir()) == [".config", "Desktop", "Documents", "Downloads"]


def test_a_worker_that_serves_another_peer_answers_nothing(home: Path) -> None:
    socket = home.parent / "hands" / "hands.sock"
    proc = start_worker(home, socket, "nobody")
    try:
        hands = RemoteHands(socket, DesktopUser.lookup(DESKTOP_USER, home), None, MAX_BYTES)
        with pytest.raises(HandsUnavailable):
            asyncio.run(hands.command(CommandRequest(command="id")))
        assert hands.on_a_timer([os.getpid()]) == set()
        assert hands.waiting([os.getpid()]) is False  # not known to rest: the settle keeps its quiet period
        assert hands.timer_soon([os.getpid()]) is False
    finally:
        proc.terminate()
        proc.wait(10)


def _write_to_a_root_listener(hands: RemoteHands, error: str) -> list[bytes]:
    """What a listener of root's on ``hands.path`` receives when ``hands`` writes a file (which fails with
    ``error``: the listener hangs up)."""
    received: list[bytes] = []

    async def go() -> None:
        async def listen(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            received.append(await reader.read(100))
            writer.close()

        server = await asyncio.start_unix_server(listen, hands.path)
        async with server:
            with pytest.raises(HandsUnavailable, match=error):
                await hands.write("secret.txt", b"what a file would hold")
            await asyncio.sleep(0.1)

    asyncio.run(go())
    return received


def test_the_service_refuses_a_socket_served_by_another_user(home: Path) -> None:
    """Not the desktop user's worker (here: root's listener): the service sends it nothing."""
    socket = home.parent / "hands" / "impostor.sock"
    hands = RemoteHands(socket, DesktopUser.lookup(DESKTOP_USER, home), None, MAX_BYTES)
    refused = rf"served by uid 0, not the worker's \({hands.worker_uid}\)"
    assert _write_to_a_root_listener(hands, refused) in ([], [b""])


def test_a_worker_the_launcher_runs_as_root_is_trusted_when_the_service_is_told_so(home: Path) -> None:
    """A checkout the desktop user cannot read: scripts/appliance.sh runs the worker as root and gives the
    service DESKTOP_HANDS_USER=root, so root's socket is the worker's (and the desktop user's is not)."""
    socket = home.parent / "hands" / "root.sock"
    settings = DesktopSettings(user=DESKTOP_USER, home=home, hands_socket=socket, hands_user="root")
    hands = hands_for(settings, DesktopUser.lookup(DESKTOP_USER, home))
    assert isinstance(hands, RemoteHands) and hands.worker_uid == 0
    received = _write_to_a_root_listener(hands, "went away")  # not a worker: it hangs up
    assert received and received[0]  # the request was sent
