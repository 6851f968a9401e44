"""A private appliance booted natively by ``scripts/appliance.sh``, exactly as ``make run`` boots it, beside
whatever else runs here: a free display number, free ports, and a temporary home, state and run directory.
The launcher, supervisord.conf and rootfs/ are the installed package's (``deskpilot/_appliance``, which the
wheel carries: setup.py) or, imported from a checkout, the checkout's.

Only the launcher's documented settings are used (docs/operations.md). It must run as root, as
``make run`` does: supervisord starts each program as its own user. The launcher runs under a small parent of
its own (``reaper.py``), a child subreaper, so everything the appliance starts stays in that one tree and the
caller's own processes are never touched. ``stop()`` stops supervisord as Ctrl-C would and reports (and
kills) anything of the appliance's still running; ``cleanup()`` deletes the directories.
"""

from __future__ import annotations

import contextlib
import http.client
import os
import random
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import xmlrpc.client
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from deskpilot.client import processes, reaper

# found from this file, not by importing the package's facade (deskpilot/__init__.py imports the client)
PACKAGE = Path(__file__).resolve().parents[1]
LAUNCHER = Path("scripts") / "appliance.sh"


def appliance_root() -> Path:
    """Where the appliance's files are laid out as in a checkout: the installed package's copy, else the
    checkout this package is imported from (which then has no such copy: setup.py makes it in the wheel)."""
    packaged = PACKAGE / "_appliance"
    return packaged if (packaged / LAUNCHER).is_file() else PACKAGE.parent


ROOT = appliance_root()


class ApplianceError(RuntimeError):
    """The appliance could not be started, or did not become ready: the message carries its log's tail."""


class DisplayTaken(ApplianceError):
    """Another X server took the appliance's display number after it was found free."""


# what Xvfb says then, and exits: its lock file, or its socket, is another server's
DISPLAY_TAKEN = ("Server is already active for display", "Cannot establish any listening sockets")
DISPLAY_TRIES = 3  # displays a native appliance that chose its own tries before it gives up


def new_token() -> str:
    """A token for an appliance the client starts: 32 random bytes, URL-safe base64, never with a leading
    ``-`` (which a command line would take for an option: ``demo.py --token -x...``)."""
    while (token := secrets.token_urlsafe(32)).startswith("-"):
        pass
    return token


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def free_displays(numbers: range = range(100, 400)) -> Iterator[int]:
    """The display numbers of ``numbers``, in random order, with no lock file and no socket, file or abstract,
    when asked (another server may take one meanwhile: whoever starts one retries with the next)."""
    try:
        unix = Path("/proc/net/unix").read_text()
    except OSError:
        unix = ""
    candidates = list(numbers)
    random.shuffle(candidates)
    for n in candidates:
        if (
            f"/tmp/.X11-unix/X{n}\n" not in unix
            and not Path(f"/tmp/.X{n}-lock").exists()
            and not Path(f"/tmp/.X11-unix/X{n}").exists()
        ):
            yield n


def free_display(numbers: range = range(100, 400)) -> str:
    """A free display number of ``numbers`` (Xvfb must get a fixed one from supervisord)."""
    for n in free_displays(numbers):
        return f":{n}"
    raise ApplianceError("no free X display number")


# an appliance's services (DESKPILOT_SERVICES starts some: the desktop's always), and their programs
SERVICES = ("desktop", "tasks", "ui")
PROGRAMS = {"desktop": "desktop-api", "tasks": "task-api", "ui": "ui"}


class Endpoints:
    """The three services of an appliance on loopback ports, and waiting until they answer."""

    desktop_port: int
    agent_port: int
    ui_port: int
    started_at: float
    services: tuple[str, ...] = SERVICES  # those started with it

    @property
    def desktop_url(self) -> str:
        return f"http://127.0.0.1:{self.desktop_port}"

    @property
    def agent_url(self) -> str:
        return f"http://127.0.0.1:{self.agent_port}"

    @property
    def ui_url(self) -> str:
        return f"http://127.0.0.1:{self.ui_port}"

    def problem(self) -> str | None:
        """Why the appliance cannot become ready any more (it exited ...), with its log; None while it can."""
        raise NotImplementedError

    def url(self, service: str) -> str:
        return {"desktop": self.desktop_url, "tasks": self.agent_url, "ui": self.ui_url}[service]

    def wait_ready(self, timeout: float = 90) -> float:
        """Seconds from start until the started services' /health answered 200."""
        self.wait_healthy(self.services, timeout, self.started_at)
        return time.monotonic() - self.started_at

    def start_service(self, service: str, timeout: float = 60) -> None:
        """Start a service that did not start with the appliance, and wait until it answers; nothing when
        it runs."""
        if service in self.services:
            return
        since = time.monotonic()
        self.start_program(PROGRAMS[service])
        self.services += (service,)
        self.wait_healthy([service], timeout, since)

    def start_program(self, program: str) -> None:
        raise NotImplementedError

    def wait_healthy(self, services: Iterable[str], timeout: float, since: float) -> None:
        pending = [f"{self.url(s)}/health" for s in services]
        deadline = since + timeout
        with httpx.Client(timeout=1) as client:
            while pending:
                if time.monotonic() > deadline:
                    raise ApplianceError(f"not ready after {timeout:g} s: {pending}\n{self.log_tail()}")
                with contextlib.suppress(httpx.HTTPError):
                    if client.get(pending[0]).status_code == 200:
                        pending.pop(0)
                        continue
                if problem := self.problem():  # not answering yet, or 503: its display not up (yet)
                    raise ApplianceError(problem)
                time.sleep(0.02)

    def log_tail(self) -> str:
        raise NotImplementedError


def default_venv(checkout: Path) -> Path:
    """The checkout's .venv, else the one this interpreter runs in (it needs the `server` extra)."""
    venv = checkout / ".venv"
    return venv if (venv / "bin" / "supervisord").exists() else Path(sys.prefix)


def check_venv(venv: Path) -> None:
    """ApplianceError unless ``venv`` has the services' programs (the `server` extra)."""
    if not (venv / "bin" / "supervisord").is_file():
        raise ApplianceError(
            f"no supervisord in {venv}: the appliance's services need the server extra there "
            '(pip install "deskpilot[server]")'
        )


@dataclass
class NativeAppliance(Endpoints):
    checkout: Path = ROOT  # where the launcher is: appliance_root(), or a checkout of Deskpilot
    base: Path = field(default_factory=lambda: Path(tempfile.mkdtemp(prefix="deskpilot-sandbox-")))
    display: str = ""  # "": a free one, chosen again if another X server takes it before Xvfb starts
    desktop_port: int = field(default_factory=free_port)
    agent_port: int = field(default_factory=free_port)
    ui_port: int = field(default_factory=free_port)
    token: str | None = None  # DESKPILOT_TOKEN; None: a loopback appliance without one
    settings: dict[str, str] = field(default_factory=dict)  # more variables, e.g. AGENT_MODEL
    venv: Path | None = None
    services: tuple[str, ...] = SERVICES  # started with it (DESKPILOT_SERVICES); the others on demand
    proc: subprocess.Popen[bytes] | None = None
    started_at: float = 0.0
    display_chosen: bool = field(default=False, init=False)

    def __post_init__(self) -> None:
        if not self.display:
            self.display, self.display_chosen = free_display(), True

    @property
    def home(self) -> Path:
        return self.base / "home"

    @property
    def log(self) -> Path:
        return self.base / "appliance.log"

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
    def env(self) -> dict[str, str]:
        env = {
            **os.environ,
            "DESKPILOT_DISPLAY": self.display,
            "DESKPILOT_HOST": "127.0.0.1",
            "DESKTOP_PORT": str(self.desktop_port),
            "TASKS_PORT": str(self.agent_port),
            "UI_PORT": str(self.ui_port),
            "DESKPILOT_HOME": str(self.home),
            "DESKPILOT_STATE_DIR": str(self.state_dir),
            "DESKPILOT_RUN_DIR": str(self.run_dir),
            "DESKPILOT_VENV": str(self.venv or default_venv(self.checkout)),
            "DESKPILOT_SERVICES": " ".join(self.services),
            **self.settings,  # last: a setting given may change any of the above (DESKPILOT_HOST ...)
        }
        env.pop("DESKPILOT_TOKEN", None)
        if self.token:
            env["DESKPILOT_TOKEN"] = self.token
        return env

    def start(self) -> NativeAppliance:
        """Start scripts/appliance.sh (which execs supervisord) and return at once."""
        launcher = self.checkout / LAUNCHER
        if not launcher.is_file():
            raise ApplianceError(
                f"no {LAUNCHER} under {self.checkout}: a native sandbox runs from an installed wheel of "
                "Deskpilot or a checkout (give image= or url= otherwise)"
            )
        if os.geteuid() != 0:
            raise ApplianceError("a native sandbox runs as root, as `make run` does (or give image= or url=)")
        check_venv(Path(self.env["DESKPILOT_VENV"]))
        self.base.chmod(0o755)  # the appliance's users must reach their directories below it
        self.started_at = time.monotonic()
        self.leftovers.unlink(missing_ok=True)
        reaper = [sys.executable, "-m", "deskpilot.client.reaper", "--quick-stop", str(self.leftovers)]
        reaper += ["--", str(launcher)]
        # the reaper imports this very package, wherever it was imported from
        package_root = str(PACKAGE.parent)
        env = self.env
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [package_root, env.get("PYTHONPATH")]))
        with self.log.open("wb") as log:
            self.proc = subprocess.Popen(
                reaper, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
            )
        return self

    def start_program(self, program: str) -> None:
        """supervisord's ``startProcess``, on its socket in the run directory (root's only: we are root)."""
        supervisor = xmlrpc.client.ServerProxy(
            "http://localhost/RPC2", transport=_UnixTransport(self.run_dir / "supervisor.sock")
        )
        try:
            supervisor.supervisor.startProcess(program, False)
        except xmlrpc.client.Fault as exc:
            if "ALREADY_STARTED" not in exc.faultString:
                raise ApplianceError(f"supervisord could not start {program}: {exc.faultString}") from None
        except OSError as exc:
            raise ApplianceError(f"supervisord could not start {program}: {exc}\n{self.log_tail()}") from None

    def problem(self) -> str | None:
        """As ``Endpoints.problem``; raises ``DisplayTaken`` when its Xvfb found the display another server's
        (supervisord starts it again and again meanwhile: the appliance itself never exits)."""
        if self.proc is None or self.proc.poll() is not None:
            return f"the appliance exited early:\n{self.log_tail()}"
        if any(words in (log := self.log_tail()) for words in DISPLAY_TAKEN):
            raise DisplayTaken(f"display {self.display} taken by another X server:\n{log}")
        return None

    def wait_ready(self, timeout: float = 90) -> float:
        """As ``Endpoints.wait_ready``; an appliance that chose its display starts again on another when
        another X server took it in between (appliances started at the same moment by processes that do not
        know of each other: the number is free when chosen, taken when Xvfb starts), ``DISPLAY_TRIES`` in all.
        """
        for _ in range(DISPLAY_TRIES - 1 if self.display_chosen else 0):
            try:
                return super().wait_ready(timeout)
            except DisplayTaken:
                self.stop()
                self.display = free_display()
                self.start()
        return super().wait_ready(timeout)

    @property
    def leftovers(self) -> Path:
        """Where the reaper lists what the appliance left running (``pid command line`` a line)."""
        return self.base / "leftovers"

    def pids(self) -> list[int]:
        """Every live process the appliance started: the reaper's descendants, daemons it adopted included."""
        return processes.descendants(self.proc.pid) if self.proc is not None else []

    def stop(self, timeout: float = 30) -> list[str]:
        """SIGTERM to supervisord, as Ctrl-C would; what was still alive after it (then killed)."""
        if self.proc is None:
            return []
        leftovers: list[str] = []
        try:
            if self.proc.poll() is None:
                self.proc.send_signal(signal.SIGTERM)
            try:  # supervisord's stop, then what it left the reaper waits for and kills
                self.proc.wait(timeout + reaper.LINGER_S)
            except subprocess.TimeoutExpired:
                leftovers.append(f"supervisord still running after {timeout:g} s")
                alive = self.pids()
                leftovers += map(processes.describe, alive)
                os.killpg(self.proc.pid, signal.SIGKILL)
                for pid in alive:
                    processes.kill(pid)
                self.proc.wait(5)
            with contextlib.suppress(OSError):
                leftovers += self.leftovers.read_text().splitlines()
        finally:
            self.proc = None
        return leftovers

    def cleanup(self) -> None:
        shutil.rmtree(self.base, ignore_errors=True)

    def shutdown(self) -> list[str]:
        """``stop()`` then ``cleanup()``: what was left running."""
        try:
            return self.stop()
        finally:
            self.cleanup()

    def log_tail(self, lines: int = 60) -> str:
        """The log's last ``lines`` (of its last 64 KiB: read on every poll while a service starts)."""
        try:
            with self.log.open("rb") as log:
                log.seek(max(0, log.seek(0, os.SEEK_END) - 65536))
                return "\n".join(log.read().decode(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"


class _UnixTransport(xmlrpc.client.Transport):
    """XML-RPC over a Unix socket (supervisord's), with the standard library alone: the caller's interpreter
    need not have supervisor installed."""

    def __init__(self, path: Path) -> None:
        super().__init__()
        self._socket = str(path)

    def make_connection(self, host: object) -> http.client.HTTPConnection:
        return _UnixConnection(self._socket)


class _UnixConnection(http.client.HTTPConnection):
    def __init__(self, path: str) -> None:
        super().__init__("localhost", timeout=10)
        self._socket = path

    def connect(self) -> None:
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(self.timeout)
        self.sock.connect(self._socket)
