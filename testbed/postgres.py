"""A throw-away PostgreSQL server for tests and benchmarks: temp data dir, free port, unix socket in the
temp dir. PostgreSQL refuses to run as root, so as root it runs as the `postgres` OS user (runuser)."""

from __future__ import annotations

import itertools
import os
import pwd
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import IO

from testbed.net import free_port

_counter = itertools.count(1)


def find_bindir() -> Path | None:
    for d in sorted(Path("/usr/lib/postgresql").glob("*/bin"), reverse=True):
        if (d / "postgres").exists():
            return d
    found = shutil.which("pg_ctl")
    return Path(found).parent if found else None


class PostgresServer:
    def __init__(self) -> None:
        bindir = find_bindir()
        if bindir is None:
            raise RuntimeError(
                "PostgreSQL binaries not found: run `make system-test` (Debian package postgresql)"
            )
        self.bindir = bindir
        self.port = free_port()
        self.root = Path(tempfile.mkdtemp(prefix="deskpilot-pg-"))
        self.data = self.root / "data"
        self.sock = self.root / "sock"
        self.log = self.root / "postgres.log"
        self.user = "postgres"
        self.proc: subprocess.Popen | None = None
        self._as: list[str] = []
        if os.geteuid() == 0:
            pw = pwd.getpwnam("postgres")
            self._as = ["runuser", "-u", "postgres", "--"]
            os.chown(self.root, pw.pw_uid, pw.pw_gid)
        self.sock.mkdir()
        if self._as:
            os.chown(self.sock, pw.pw_uid, pw.pw_gid)

    def _run(self, *argv: str) -> None:
        subprocess.run([*self._as, *argv], check=True, capture_output=True, cwd=self.root)

    def start(self) -> PostgresServer:
        self._run(
            str(self.bindir / "initdb"),
            "-D",
            str(self.data),
            "-U",
            self.user,
            "-A",
            "trust",
            "--no-sync",
            "-E",
            "UTF8",
            "--locale=C",
        )
        with self.log.open("ab") as log:
            self.proc = self._serve(log)
        deadline = time.monotonic() + 30
        while True:
            ok = (
                subprocess.run(
                    [str(self.bindir / "pg_isready"), "-h", "127.0.0.1", "-p", str(self.port)],
                    capture_output=True,
                ).returncode
                == 0
            )
            if ok:
                return self
            if self.proc.poll() is not None or time.monotonic() > deadline:
                err = self.log.read_text(errors="replace")
                self.stop()
                raise RuntimeError(f"postgres did not start: {err[-2000:]}")
            time.sleep(0.05)

    def _serve(self, log: IO[bytes]) -> subprocess.Popen[bytes]:
        return subprocess.Popen(
            [
                *self._as,
                str(self.bindir / "postgres"),
                "-D",
                str(self.data),
                "-p",
                str(self.port),
                "-k",
                str(self.sock),
                "-c",
                "listen_addresses=127.0.0.1",
                "-c",
                "fsync=off",
                "-c",
                "synchronous_commit=off",
                "-c",
                "full_page_writes=off",
                "-c",
                "max_connections=200",
            ],
            cwd=self.root,
            stdout=subprocess.DEVNULL,
            # a file, not a pipe: nobody reads a pipe while tests run, and once its 64 KiB fill up, the
            # server's next log line (a checkpoint's) blocks it, and with it every CREATE DATABASE
            stderr=log,
            start_new_session=True,
        )

    def url(self, database: str = "postgres") -> str:
        return f"postgresql://{self.user}@127.0.0.1:{self.port}/{database}"

    def create_database(self, prefix: str = "t") -> str:
        """A fresh empty database; returns its URL."""
        name = f"{prefix}_{os.getpid()}_{next(_counter)}"
        self.execute(f'CREATE DATABASE "{name}" STRATEGY FILE_COPY')
        return self.url(name)

    def execute(self, sql: str, database: str = "postgres") -> None:
        """One statement as the superuser (psql, so it may be one that cannot run in a transaction)."""
        subprocess.run(
            [
                str(self.bindir / "psql"),
                "-h",
                "127.0.0.1",
                "-p",
                str(self.port),
                "-U",
                self.user,
                "-d",
                database,
                "-q",
                "-v",
                "ON_ERROR_STOP=1",
                "-c",
                sql,
            ],
            check=True,
            capture_output=True,
        )

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, 3)  # SIGQUIT: immediate shutdown; the data is thrown away anyway
                self.proc.wait(timeout=15)
            except (ProcessLookupError, PermissionError):
                self.proc.terminate()
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, 9)
                self.proc.wait(timeout=5)
        shutil.rmtree(self.root, ignore_errors=True)
