"""The processes a sandbox started, read from /proc (Linux; no dependency).

While a native sandbox runs, this process is a child subreaper: anything the appliance leaves running, even a
daemon that double-forked, stays our descendant, so stopping it can prove nothing is left behind.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import threading
from pathlib import Path

PR_SET_CHILD_SUBREAPER = 36
_lock = threading.Lock()
_holders = 0  # sandboxes that need the subreaper on


def _prctl_subreaper(on: bool) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_CHILD_SUBREAPER, int(on), 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_CHILD_SUBREAPER)")


def hold_subreaper() -> None:
    global _holders
    with _lock:
        if _holders == 0:
            _prctl_subreaper(True)
        _holders += 1


def release_subreaper() -> None:
    global _holders
    with _lock:
        _holders = max(0, _holders - 1)
        if _holders == 0:
            _prctl_subreaper(False)


def _stat(pid: int) -> tuple[int, str] | None:
    """(parent pid, state) of a process, None once it is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return int(fields[1]), fields[0]


def descendants(root: int | None = None) -> list[int]:
    """Live descendants of ``root`` (default: this process), zombies left out."""
    root = os.getpid() if root is None else root
    children: dict[int, list[int]] = {}
    states: dict[int, str] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit() and (found := _stat(int(entry))):
            children.setdefault(found[0], []).append(int(entry))
            states[int(entry)] = found[1]
    out: list[int] = []
    todo = list(children.get(root, []))
    while todo:
        pid = todo.pop()
        if states.get(pid) != "Z":
            out.append(pid)
        todo += children.get(pid, [])
    return sorted(out)


def environment(pid: int) -> dict[str, str]:
    """A process's environment as it started (empty when it cannot be read: gone, or not ours to read)."""
    try:
        raw = Path(f"/proc/{pid}/environ").read_bytes()
    except OSError:
        return {}
    pairs = (item.split(b"=", 1) for item in raw.split(b"\0") if b"=" in item)
    return {k.decode(errors="replace"): v.decode(errors="replace") for k, v in pairs}


def foreign(pid: int, owned: dict[str, str]) -> bool:
    """Whether a process's environment names another value for one of ``owned`` (another appliance's run
    directory or display): a process another appliance, or a test's own display, started, which this
    subreaper adopted when its parent went away."""
    env = environment(pid)
    return any(name in env and env[name] != value for name, value in owned.items())


def describe(pid: int) -> str:
    """``pid command line`` for a report, as far as it can still be read."""
    try:
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        argv = "?"
    return f"{pid} {argv.strip()[:120]}"


def kill(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.kill(pid, 9)


def reap() -> None:
    """Collect the zombies among our children (orphans we adopted as the subreaper)."""
    for entry in os.listdir("/proc"):
        if entry.isdigit() and (found := _stat(int(entry))) and found[0] == os.getpid() and found[1] == "Z":
            with contextlib.suppress(ChildProcessError):
                os.waitpid(int(entry), os.WNOHANG)
