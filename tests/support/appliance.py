"""The whole appliance, booted natively from supervisord.conf and rootfs/ exactly as `make run` boots it.

It runs beside a developer's own appliance: a free display number, free ports and a private temporary
home/state/run directory. The process that starts it becomes a child subreaper, so anything the appliance
leaves running (even a double-forked daemon) stays visible as our descendant and `stop()` can prove that
nothing is left behind. It requires a token (its own, given as DESKPILOT_TOKEN) unless told otherwise.
"""

from __future__ import annotations

import ctypes
import os
import random
import re
import secrets
import shutil
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import psutil

from deskpilot.config import PROVIDERS
from tests.support.net import free_port

ROOT = Path(__file__).resolve().parents[2]
PR_SET_CHILD_SUBREAPER = 36
PROGRAMS = ("dbus", "xvfb", "xfwm4", "xfdesktop", "xfce4-panel", "x11vnc", "desktop-api", "agent-api", "ui")


def agent_secrets() -> dict[str, str]:
    """A fresh value for each variable only the task service may see: every provider's key and model
    (deskpilot/config.py's PROVIDERS), the LLM proxy's and the OpenAI-compatible server's keys."""
    names = [v for p in PROVIDERS for v in (p.key_var, p.model_var)]
    names += ["AGENT_LLM_PROXY_KEY", "AGENT_OPENAI_BASE_KEY"]
    return {name: f"fake-{name.lower()}-{secrets.token_hex(12)}" for name in names}


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
    # DESKPILOT_TOKEN, or None for none given (the launcher then decides); `settings`: more of the environment
    token: str | None = field(default_factory=lambda: secrets.token_urlsafe(32))
    settings: dict[str, str] = field(default_factory=dict)
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
    def state_dir(self) -> Path:
        return self.base / "state"

    @property
    def run_dir(self) -> Path:
        return self.base / "run"

    @property
    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"} if self.token else {}

    @property
    def health_urls(self) -> list[str]:
        return [f"{u}/health" for u in (self.desktop_url, self.agent_url, self.ui_url)]

    @property
    def env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if k.upper() != "DESKPILOT_TOKEN"}
        return {
            **env,
            **({"DESKPILOT_TOKEN": self.token} if self.token else {}),
            "DESKPILOT_DISPLAY": self.display,
            "DESKPILOT_HOST": "127.0.0.1",
            "DESKTOP_PORT": str(self.desktop_port),
            "AGENT_PORT": str(self.agent_port),
            "UI_PORT": str(self.ui_port),
            "DESKTOP_VNC_PORT": str(self.vnc_port),
            "DESKPILOT_HOME": str(self.home),
            "DESKPILOT_STATE_DIR": str(self.state_dir),
            "DESKPILOT_RUN_DIR": str(self.run_dir),
            "DESKPILOT_VENV": str(ROOT / ".venv"),
            **self.settings,
        }

    @property
    def session_env(self) -> dict[str, str]:
        """What a program in the appliance's desktop session sees (the launcher's session_env)."""
        return {
            **os.environ,
            "DISPLAY": self.display,
            "XAUTHORITY": str(self.run_dir / "Xauthority"),
            "HOME": str(self.home),
            "XDG_RUNTIME_DIR": str(self.run_dir / "session"),
            "TMPDIR": str(self.run_dir / "session" / "tmp"),
            "DBUS_SESSION_BUS_ADDRESS": f"unix:path={self.run_dir / 'session' / 'bus'}",
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

    def restart(self, **settings: str) -> list[str]:
        """Stop, then start again on the same home, state, display and ports, with `settings` changed (a
        value of "" drops one); returns what the stop left behind. The log starts afresh."""
        leftovers = self.stop()
        self.settings = {k: v for k, v in {**self.settings, **settings}.items() if v}
        self.start()
        self.wait_healthy()
        return leftovers

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
            env=self.env,
            capture_output=True,
            text=True,
            timeout=30,
        )
        return out.stdout + out.stderr

    def computer(self, action: str, **fields: object) -> httpx.Response:
        """POST /computer-use with the appliance's token."""
        url, body = f"{self.desktop_url}/computer-use", {"action": action, **fields}
        return httpx.post(url, json=body, headers=self.headers, timeout=120)

    def pid(self, program: str) -> int:
        return int(self.ctl("pid", program).strip())

    def status(self) -> dict[str, str]:
        """{program: state}, e.g. {"xvfb": "RUNNING"}."""
        rows = [line.split() for line in self.ctl("status").splitlines()]
        return {row[0]: row[1] for row in rows if len(row) > 1}

    def runs_as(self) -> dict[str, str]:
        """Who appliance.sh decided runs each program: the desktop user, the services' system user, or root
        for a checkout one of them cannot read."""
        log = self.log.read_text(errors="replace")
        m = re.search(r"session runs as (\S+), desktop service as (\S+), task service and UI as (\S+),", log)
        assert m, f"no launcher line in the log:\n{self.log_tail()}"
        session, desktop, agent = m.groups()
        return (
            {p: session for p in PROGRAMS}
            | dict.fromkeys(("xvfb", "desktop-api"), desktop)
            | {
                "agent-api": agent,
                "ui": agent,
            }
        )

    def log_tail(self, lines: int = 60) -> str:
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"
