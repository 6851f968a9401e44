"""write_file / read_file with the desktop user's rights only.

Relative paths resolve under the user's Desktop (``DESKTOP_FILES_DIR``), ``~/`` under their home
(``DESKTOP_HOME``), absolute ones are used as given. When the service runs as root, every file operation
happens on a small pool of dedicated threads whose filesystem credentials are dropped to the desktop user
with raw syscalls as each thread starts (setgroups, setfsgid, setfsuid are per-thread on Linux; glibc's
setgroups() would change every thread). Dropping fsuid from 0 also clears the thread's effective file
capabilities (CAP_DAC_OVERRIDE ...), so the kernel checks exactly what the user may do. Running as the user
already, plain I/O is used on the same pool. Several threads, so that one slow file (a big one, a slow
disk) never holds up the next action; only regular files are read or replaced, so nothing can block
a thread for ever (a FIFO's open waits for a writer, a device such as /dev/zero never ends).
"""

from __future__ import annotations

import asyncio
import codecs
import contextlib
import ctypes
import ctypes.util
import errno
import mimetypes
import os
import platform
import pwd
import secrets
import stat
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from deskpilot.errors import DesktopError, FileConflict, FileMissing, InvalidAction, TooLarge

T = TypeVar("T")

# Threads per FileStore: file actions run concurrently, each on a thread with the user's rights.
FILE_THREADS = 4
# A write goes to a temporary file named so, then takes its name; ``FileStore.sweep`` finds the leftovers
TEMPORARY_PREFIX = ".deskpilot-"
# The store a file thread belongs to, set once its credentials are dropped (see ``_init_file_thread``).
_file_thread = threading.local()

_SYSCALLS = {  # (setgroups, setfsuid, setfsgid)
    "x86_64": (116, 122, 123),
    "aarch64": (159, 151, 152),
}


@dataclass(frozen=True, slots=True)
class FileContent:
    data: bytes
    name: str
    size: int
    media_type: str
    path: str


@dataclass(frozen=True, slots=True)
class DesktopUser:
    name: str
    uid: int
    gid: int
    home: Path

    @classmethod
    def lookup(cls, name: str, home: Path | None = None) -> DesktopUser:
        """The user's ids, and ``home`` or else the home of their passwd entry."""
        try:
            pw = pwd.getpwnam(name)
        except KeyError:
            raise RuntimeError(f"the desktop user {name!r} does not exist") from None
        return cls(name=name, uid=pw.pw_uid, gid=pw.pw_gid, home=home or Path(pw.pw_dir))


def _drop_thread_credentials(uid: int, gid: int) -> None:
    """Runs once on the file thread: from now on it acts as uid/gid with no supplementary groups."""
    nums = _SYSCALLS.get(platform.machine())
    if nums is None:
        raise RuntimeError(f"no per-thread credential syscalls known for {platform.machine()}")
    libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
    libc.syscall.restype = ctypes.c_long
    setgroups, setfsuid, setfsgid = nums
    if libc.syscall(setgroups, ctypes.c_size_t(0), ctypes.c_void_p(None)) != 0:
        raise OSError(ctypes.get_errno(), "setgroups failed")
    libc.syscall(setfsgid, ctypes.c_uint(gid))
    libc.syscall(setfsuid, ctypes.c_uint(uid))
    # setfs*id return the previous value, never an error: read back to be sure the drop took effect
    if (
        libc.syscall(setfsuid, ctypes.c_uint(0xFFFFFFFF)) != uid
        or libc.syscall(setfsgid, ctypes.c_uint(0xFFFFFFFF)) != gid
    ):
        raise RuntimeError("could not drop the file thread's credentials")


# What a request may add around a file's base64: the JSON of the action, its path (4096 characters at
# most, each escaped to 12 bytes at worst) and, over MCP, the JSON-RPC envelope.
REQUEST_MARGIN = 64 << 10


def base64_size(n: int) -> int:
    """The length of the padded base64 of ``n`` bytes."""
    return (n + 2) // 3 * 4


def max_request_bytes(max_file_bytes: int) -> int:
    """The largest request body the desktop reads: a write_file of a file at the limit."""
    return base64_size(max_file_bytes) + REQUEST_MARGIN


class FileStore:
    """Reads and writes files for the desktop user; see the module docstring for the rights model."""

    def __init__(self, user: DesktopUser, files_dir: Path | None = None, max_bytes: int = 100 << 20) -> None:
        self.user = user
        self.root = files_dir or user.home / "Desktop"
        self.max_bytes = max_bytes
        self.dropped = os.geteuid() == 0 and user.uid != 0
        self._pool = ThreadPoolExecutor(
            max_workers=FILE_THREADS, thread_name_prefix="desktop-files", initializer=self._init_file_thread
        )

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)

    def sweep(self) -> int:
        """Delete the temporary files of writes that were interrupted (the service killed mid-write) under the
        home, links never followed; how many. Only at a start, before any write of this process."""
        removed = 0
        for directory, _, names in os.walk(self.user.home):
            for name in names:
                if name.startswith(TEMPORARY_PREFIX) and name.endswith(".tmp"):
                    with contextlib.suppress(OSError):
                        os.unlink(os.path.join(directory, name))
                        removed += 1
        return removed

    def resolve(self, path: str) -> Path:
        p = self.user.home / path[2:] if path.startswith("~/") else Path(path)
        return Path(os.path.normpath(p if p.is_absolute() else self.root / p))

    async def write(self, path: str, data: bytes, *, overwrite: bool = True) -> Path:
        """Write ``data`` at ``path``, replacing a file there unless ``overwrite`` is false (then 409)."""
        if len(data) > self.max_bytes:
            raise TooLarge(f"the file is {len(data)} bytes; the limit is {self.max_bytes} bytes")
        target = self.resolve(path)
        return await self._run(self._write, target, data, overwrite)

    async def read(self, path: str) -> FileContent:
        return await self._run(self._read, self.resolve(path))

    async def as_user(self, fn: Callable[..., T], *args: Any) -> T:
        """``fn(*args)`` on a file thread: with the desktop user's rights only (``POST /reset``)."""
        return await self._run(self._on_user_thread, fn, *args)

    def _on_user_thread(self, fn: Callable[..., T], *args: Any) -> T:
        self._on_file_thread()
        return fn(*args)

    async def _run(self, fn: Callable[..., T], *args: Any) -> T:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._pool, fn, *args)

    def _init_file_thread(self) -> None:
        if self.dropped:
            _drop_thread_credentials(self.user.uid, self.user.gid)
        _file_thread.store = self  # only now may this thread touch the user's files

    def _on_file_thread(self) -> None:
        # every operation must run on one of this store's threads, whose credentials were dropped
        if getattr(_file_thread, "store", None) is not self:
            raise RuntimeError("file I/O escaped the desktop user's threads")

    def _write(self, target: Path, data: bytes, overwrite: bool) -> Path:
        self._on_file_thread()
        try:
            self._makedirs(target.parent)
            with contextlib.suppress(FileNotFoundError):
                _require_regular(os.stat(target).st_mode, target)
                if not overwrite:  # known before writing the data; _publish makes it certain
                    raise _conflict(target)
            # a short name: `.{name}.{hex}.tmp` passed NAME_MAX (255 bytes) for legal names of 242 and more
            tmp = target.parent / f"{TEMPORARY_PREFIX}{secrets.token_hex(8)}.tmp"
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o644)
            try:
                with os.fdopen(fd, "wb", closefd=True) as f:
                    os.fchmod(f.fileno(), 0o644)
                    f.write(data)
                _publish(tmp, target, overwrite)
            finally:
                tmp.unlink(missing_ok=True)
        except DesktopError:
            raise
        except OSError as exc:
            raise _os_error(exc, target, "write") from None
        return target

    def _makedirs(self, directory: Path) -> None:
        missing: list[Path] = []
        path = directory
        while not path.exists():
            missing.append(path)
            if path.parent == path:
                break
            path = path.parent
        for path in reversed(missing):
            with contextlib.suppress(FileExistsError):
                os.mkdir(path, 0o755)
                os.chmod(path, 0o755)

    def _read(self, target: Path) -> FileContent:
        self._on_file_thread()
        try:
            # O_NONBLOCK: opening a FIFO would wait for a writer; fstat then refuses anything irregular
            fd = os.open(target, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
            try:
                st = os.fstat(fd)
                _require_regular(st.st_mode, target)
                if st.st_size > self.max_bytes:
                    raise TooLarge(f"{target} is {st.st_size} bytes; the limit is {self.max_bytes} bytes")
                with open(fd, "rb", closefd=False) as f:
                    data = f.read(self.max_bytes + 1)
            finally:
                os.close(fd)
        except DesktopError:
            raise
        except OSError as exc:
            raise _os_error(exc, target, "read") from None
        if len(data) > self.max_bytes:
            raise TooLarge(f"{target} is larger than the limit of {self.max_bytes} bytes")
        return FileContent(
            data=data,
            name=target.name,
            size=len(data),
            media_type=media_type(target.name, data),
            path=str(target),
        )


def _publish(tmp: Path, target: Path, overwrite: bool) -> None:
    """Give the written temporary file its name: replacing what is there, or only if nothing is (a hard
    link fails with EEXIST when the name exists, atomically, unlike a check before a rename)."""
    if overwrite:
        os.replace(tmp, target)
        return
    try:
        os.link(tmp, target)
    except FileExistsError:
        raise _conflict(target) from None


def _conflict(target: Path) -> FileConflict:
    return FileConflict(f"{target} already exists; write to another path, or set overwrite to true")


_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
)


def _require_regular(mode: int, target: Path) -> None:
    if stat.S_ISREG(mode):
        return
    kind = next((name for is_kind, name in _KINDS if is_kind(mode)), "not a regular file")
    raise InvalidAction(f"{target} is {kind}; give the path of a regular file")


def _os_error(exc: OSError, target: Path, verb: str) -> DesktopError:
    if exc.errno == errno.ENOENT:
        if verb == "read":
            return FileMissing(f"{target} does not exist")
        return InvalidAction(f"cannot create {target}: a parent directory does not exist")
    if exc.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
        return InvalidAction(f"the desktop user may not {verb} {target} (permission denied)")
    if exc.errno == errno.EISDIR:
        return InvalidAction(f"{target} is a directory; give a file path")
    if exc.errno == errno.ENXIO:  # opening a socket, or a device without a driver
        return InvalidAction(f"{target} is not a regular file; give the path of a regular file")
    if exc.errno in (errno.ENOTDIR, errno.ENAMETOOLONG, errno.ELOOP, errno.EINVAL):
        return InvalidAction(f"cannot {verb} {target}: {exc.strerror}")
    if exc.errno in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG):
        return TooLarge(f"cannot {verb} {target}: {exc.strerror}")
    return InvalidAction(f"cannot {verb} {target}: {exc.strerror or exc}")


_SIGNATURES = (
    (b"\x89PNG\r\n\x1a\n", "image/png"),
    (b"\xff\xd8\xff", "image/jpeg"),
    (b"GIF87a", "image/gif"),
    (b"GIF89a", "image/gif"),
    (b"%PDF-", "application/pdf"),
    (b"PK\x03\x04", "application/zip"),
    (b"\x1f\x8b", "application/gzip"),
    (b"\x7fELF", "application/x-executable"),
)


def media_type(name: str, data: bytes) -> str:
    """From the extension when known, else sniffed from the first bytes."""
    guessed, _ = mimetypes.guess_type(name, strict=False)
    if guessed:
        return guessed
    head = data[:16]
    for magic, kind in _SIGNATURES:
        if head.startswith(magic):
            return kind
    if head.startswith(b"RIFF") and data[8:12] == b"WEBP":
        return "image/webp"
    try:  # incremental: a multi-byte character cut at the 4096th byte is still text
        codecs.getincrementaldecoder("utf-8")().decode(data[:4096], final=False)
    except UnicodeDecodeError:
        return "application/octet-stream"
    return "text/plain" if b"\x00" not in head else "application/octet-stream"
