"""Out of disk space: how the task service recognises a write that failed for lack of space, and what it
remembers of it for ``/health``.

A full disk is not a bug: the write is refused with 507 (``StorageFull``, in the service's error shape) and
the connection stays open; the database keeps everything committed before (SQLite rolls the failed
transaction back, and so does PostgreSQL), and the same request succeeds once space is freed, without a
restart. Recognised: SQLite's ``SQLITE_FULL`` ("database or disk is full") and its failure to grow the WAL's
index, PostgreSQL's SQLSTATE class 53100 (``disk_full``), and ``ENOSPC``/``EDQUOT`` from the file system
(an upload spooled to the temporary directory, say).
"""

from __future__ import annotations

import contextlib
import errno
import logging
import sqlite3
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field

from deskpilot.errors import StorageFull

log = logging.getLogger(__name__)

SQLITE_FULL = 13
SQLITE_IOERR_SHMSIZE = 4874  # SQLITE_IOERR | 19 << 8: the WAL's index could not grow
PG_DISK_FULL = "53100"
NO_SPACE = frozenset({errno.ENOSPC, errno.EDQUOT})
# /health reports a failed write this long after it when no write was tried since (none succeeded to say
# the space is back, none failed to say it is not); a write refused again reports it again.
REPORT_SECONDS = 60.0
MESSAGE = (
    "The task database is out of disk space: this change was not saved (what was saved before is intact). "
    "Free space where the database is, then retry."
)


def says_no_space(exc: BaseException) -> bool:
    """Whether this one exception (not its causes) reports a lack of disk space."""
    if isinstance(exc, OSError) and exc.errno in NO_SPACE:
        return True
    if isinstance(exc, sqlite3.Error):
        code = getattr(exc, "sqlite_errorcode", None)
        if isinstance(code, int):
            return code & 0xFF == SQLITE_FULL or code == SQLITE_IOERR_SHMSIZE
        return "database or disk is full" in str(exc)
    # asyncpg's errors, SQLAlchemy's adaptation of them (``pgcode``) and psycopg's all carry the SQLSTATE
    state = getattr(exc, "sqlstate", None) or getattr(exc, "pgcode", None)
    return state == PG_DISK_FULL


def out_of_space(exc: BaseException) -> bool:
    """Whether ``exc`` or what it wraps (SQLAlchemy's ``orig``, an explicit ``raise ... from``) reports a
    lack of disk space."""
    seen: set[int] = set()
    pending: list[BaseException] = [exc]
    while pending:
        current = pending.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        if says_no_space(current):
            return True
        for wrapped in (getattr(current, "orig", None), current.__cause__):
            if isinstance(wrapped, BaseException):
                pending.append(wrapped)
    return False


@dataclass
class Space:
    """Whether the latest write failed for lack of space: set by a write refused for it, cleared by any write
    that succeeds (a request's, the worker's lease or heartbeat), forgotten ``REPORT_SECONDS`` after the last
    refusal when nothing was written since."""

    clock: Callable[[], float] = time.monotonic
    report_seconds: float = REPORT_SECONDS
    failed_at: float | None = field(default=None, init=False)
    cause: str = field(default="", init=False)

    @contextlib.asynccontextmanager
    async def watching(self) -> AsyncIterator[None]:
        """Around one write: a failure for lack of space is raised as ``StorageFull`` (507) and remembered, a
        success forgets the last one."""
        try:
            yield
        except Exception as exc:
            if out_of_space(exc):
                raise self.failed(exc) from exc
            raise
        self.succeeded()

    def failed(self, exc: BaseException) -> StorageFull:
        """Record the refusal; the error to raise instead of ``exc``."""
        if self.failed_at is None:
            log.error("a write failed: out of disk space", extra={"error": _root(exc)})
        self.failed_at, self.cause = self.clock(), _root(exc)
        return StorageFull(MESSAGE)

    def succeeded(self) -> None:
        if self.failed_at is not None:
            log.info("a write succeeded again after running out of disk space")
        self.failed_at = None

    def problem(self) -> str | None:
        """What ``/health`` reports, or None."""
        if self.failed_at is None:
            return None
        ago = self.clock() - self.failed_at
        if ago > self.report_seconds:
            return None
        return (
            f"out of disk space: a write failed {ago:.0f} s ago ({self.cause}); "
            "writes answer 507 until space is freed, reads work"
        )


def _root(exc: BaseException) -> str:
    """The driver's own words for the innermost cause (``database or disk is full``)."""
    inner: BaseException = exc
    for _ in range(16):  # a chain, not a cycle
        nxt = getattr(inner, "orig", None) or inner.__cause__
        if not isinstance(nxt, BaseException):
            break
        inner = nxt
    text = str(inner).strip().splitlines()[0] if str(inner).strip() else type(inner).__name__
    return text[:200]
