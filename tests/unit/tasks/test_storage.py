"""What /health says of a full disk, on a clock of the test's own: from a refused write until one succeeds,
or until a while has passed with nothing written."""

from __future__ import annotations

import sqlite3

import asyncpg.exceptions

from deskpilot.errors import StorageFull
from deskpilot.tasks.storage import REPORT_SECONDS, Space, out_of_space


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def full() -> sqlite3.OperationalError:
    error = sqlite3.OperationalError("database or disk is full")
    error.sqlite_errorcode = 13
    return error


def test_a_refused_write_is_reported_until_one_succeeds() -> None:
    clock = Clock()
    space = Space(clock=clock)
    assert space.problem() is None
    raised = space.failed(full())
    assert isinstance(raised, StorageFull) and raised.status == 507
    clock.now += 3
    problem = space.problem()
    assert problem is not None and "3 s ago (database or disk is full)" in problem
    space.succeeded()
    assert space.problem() is None


def test_with_nothing_written_since_the_report_fades() -> None:
    clock = Clock()
    space = Space(clock=clock)
    space.failed(full())
    clock.now += REPORT_SECONDS
    assert space.problem() is not None
    clock.now += 1
    assert space.problem() is None
    space.failed(full())  # refused again: reported again
    assert space.problem() is not None


def test_postgresql_and_file_system_errors_by_their_codes() -> None:
    assert out_of_space(asyncpg.exceptions.DiskFullError("could not extend file"))  # SQLSTATE 53100
    assert not out_of_space(asyncpg.exceptions.OutOfMemoryError("out of memory"))  # 53200: not the disk
    assert out_of_space(OSError(122, "Disk quota exceeded"))
    locked = sqlite3.OperationalError("database is locked")
    locked.sqlite_errorcode = 5
    assert not out_of_space(locked)
