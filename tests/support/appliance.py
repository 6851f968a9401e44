"""The whole appliance, booted natively from supervisord.conf and rootfs/ exactly as `make run` boots it.

It runs beside a developer's own appliance: a free display number, free ports and a private temporary
home/state/run directory. The process that starts it becomes a child subreaper, so anything the appliance
leaves running (even a double-forked daemon) stays visible as our descendant and `stop()` can prove that
nothing is left behind.
"""

from __future__ import annotations

import ctypes
import os
import random
import re
import shutil
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import psutil

from tests.support.net import free_port

ROOT = Path(__file__).resolve().parents[2]
PR_SET_CHILD_SUBREAPER = 36
PROGRAMS = ("dbus", "xvfb", "xfwm4", "xfdesktop", "xfce4-panel", "x11vnc", "desktop-api", "agent-api", "ui")


def free_display() -> str:
    """A display number with neither a lock file nor a socket (Xvfb must get a fixed one from supervisord)."""
    start = random.randrange(100, 400)
    for n in range(start, start + 200):
        if not Path(f"/tmp/.X{n}-lock").exists() and not Path(f"/tmp/.X11-unix/X{n}").exists():
            return f":{n}"
    raise RuntimeError("no free X display number")


def _set_subreaper(on: bool) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_CHILD_SUBREAPER, int(on), 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_CHILD_SUBREAPER)")


@dataclass
class Appliance:
    base: Path = field(default_factory=lambda: Path(tempfile.mkdtemp(prefix="deskpilot-e2e-")))
    display: str = field(default_factory=free_display)
    desktop_port: int = field(default_factory=free_port)
    agent_port: int = field(default_factory=free_port)
    ui_port: int = field(default_factory=free_port)
    vnc_port: int = field(default_factory=free_port)
    proc: subprocess.Popen | None = None
    started_at: float = 0.0
    boot_seconds: float = 0.0
    _before: set[int] = field(default_factory=set)

    @property
    def home(self) -> Path:
        return self.base / "home"

    @property
    def log(self) -> Path:
        return self.base / "appliance.log"

    @property
    def desktop_url(self) -> str:
        return f"http://127.0.0.1:{self.desktop_port}"

    @property
    def agent_url(self) -> str:
        return f"http://127.0.0.1:{self.agent_port}"

    @property
    def ui_url(self) -> str:
        return f"http://127.0.0.1:{self.ui_port}"

    @property
    def health_urls(self) -> list[str]:
        return [f"{u}/health" for u in (self.desktop_url, self.agent_url, self.ui_url)]

    @property
    def env(self) -> dict[str, str]:
        return {
            **os.environ,
            "DESKPILOT_DISPLAY": self.display,
            "DESKPILOT_HOST": "127.0.0.1",
            "DESKTOP_PORT": str(self.desktop_port),
            "AGENT_PORT": str(self.agent_port),
            "UI_PORT": str(self.ui_port),
            "DESKTOP_VNC_PORT": str(self.vnc_port),
            "DESKPILOT_HOME": str(self.home),
            "DESKPILOT_STATE_DIR": str(self.base / "state"),
            "DESKPILOT_RUN_DIR": str(self.base / "run"),
            "DESKPILOT_VENV": str(ROOT / ".venv"),
        }

    @property
    def session_env(self) -> dict[str, str]:
        """What a program in the appliance's desktop session sees (see [supervisord] environment=)."""
        return {
            **os.environ,
            "DISPLAY": self.display,
            "HOME": str(self.home),
            "XDG_RUNTIME_DIR": str(self.base / "run" / "session"),
            "TMPDIR": str(self.base / "run" / "session" / "tmp"),
            "DBUS_SESSION_BUS_ADDRESS": f"unix:path={self.base / 'run' / 'session' / 'bus'}",
            "NO_AT_BRIDGE": "1",
        }

    # ------------------------------------------------------------------------------------------ lifecycle

    def start(self) -> Appliance:
        """Start scripts/appliance.sh (which execs supervisord) and return at once."""
        self.base.chmod(0o755)  # the desktop user must reach its home, state and session dirs below it
        _set_subreaper(True)
        self._before = {p.pid for p in psutil.Process().children(recursive=True)}
        self.started_at = time.monotonic()
        self.proc = subprocess.Popen(
            [str(ROOT / "scripts" / "appliance.sh")],
            env=self.env,
            stdout=self.log.open("wb"),
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        return self

    def wait_healthy(self, timeout: float = 60) -> float:
        """Seconds from start until all three /health endpoints answered 200."""
        pending = list(self.health_urls)
        deadline = self.started_at + timeout
        with httpx.Client(timeout=1) as client:
            while pending:
                if self.proc is None or self.proc.poll() is not None:
                    raise RuntimeError(f"the appliance exited early:\n{self.log_tail()}")
                if time.monotonic() > deadline:
                    raise TimeoutError(f"not healthy after {timeout} s: {pending}\n{self.log_tail()}")
                try:
                    if client.get(pending[0]).status_code == 200:
                        pending.pop(0)
                        continue
                except httpx.HTTPError:
                    pass
                time.sleep(0.02)
        return time.monotonic() - self.started_at

    def processes(self) -> list[psutil.Process]:
        """Every live process the appliance started (our descendants that were not there before)."""
        out = []
        for p in psutil.Process().children(recursive=True):
            try:
                if p.pid not in self._before and p.status() != psutil.STATUS_ZOMBIE:
                    out.append(p)
            except psutil.NoSuchProcess:
                pass
        return out

    def stop(self, timeout: float = 30) -> list[str]:
        """SIGTERM to supervisord, as Ctrl-C or `docker stop` would; returns what was still alive after it."""
        leftovers: list[str] = []
        try:
            if self.proc and self.proc.poll() is None:
                self.proc.send_signal(signal.SIGTERM)
                try:
                    self.proc.wait(timeout)
                except subprocess.TimeoutExpired:
                    leftovers.append(f"supervisord still running after {timeout} s")
            deadline = time.monotonic() + 10
            while (alive := self.processes()) and time.monotonic() < deadline:
                self._reap()
                time.sleep(0.1)
            for p in alive:
                try:
                    leftovers.append(f"{p.pid} {p.username()} {' '.join(p.cmdline())[:120]}")
                    p.kill()
                except psutil.NoSuchProcess:
                    pass
            if self.proc and self.proc.poll() is None:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(5)
        finally:
            self._reap()
            _set_subreaper(False)
        return leftovers

    def cleanup(self) -> None:
        shutil.rmtree(self.base, ignore_errors=True)

    @staticmethod
    def _reap() -> None:
        """Collect orphans that became our children (PID 1 on these VMs does not reap)."""
        for p in psutil.Process().children():
            try:
                if p.status() == psutil.STATUS_ZOMBIE:
                    os.waitpid(p.pid, os.WNOHANG)
            except (psutil.NoSuchProcess, ChildProcessError):
                pass

    # ------------------------------------------------------------------------------------------ helpers

    def ctl(self, *args: str) -> str:
        """supervisorctl against this appliance."""
        out = subprocess.run(
            [str(ROOT / ".venv" / "bin" / "supervisorctl"), "-c", str(ROOT / "supervisord.conf"), *args],
            env={**self.env, "DESKPILOT_SERVICE_USER": "user"},
            capture_output=True,
            text=True,
            timeout=30,
        )
        return out.stdout + out.stderr

    def pid(self, program: str) -> int:
        return int(self.ctl("pid", program).strip())

    def status(self) -> dict[str, str]:
        """{program: state}, e.g. {"xvfb": "RUNNING"}."""
        rows = [line.split() for line in self.ctl("status").splitlines()]
        return {row[0]: row[1] for row in rows if len(row) > 1}

    @property
    def service_user(self) -> str:
        """Who appliance.sh decided runs the services: `user`, or root for a checkout `user` cannot read."""
        m = re.search(r"services as (\S+),", self.log.read_text(errors="replace"))
        assert m, f"no launcher line in the log:\n{self.log_tail()}"
        return m.group(1)

    def log_tail(self, lines: int = 60) -> str:
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"
