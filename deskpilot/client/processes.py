"""The processes a sandbox started, read from /proc (Linux; no dependency).

A native sandbox's launcher runs under a child subreaper of its own (``reaper.py``): anything the appliance
leaves running, even a daemon that double-forked, stays that process's descendant, so stopping it can prove
nothing is left behind, and nothing of the caller's is mistaken for the appliance's.
"""

from __future__ import annotations

import contextlib
import os
import signal
from collections.abc import Collection
from pathlib import Path


def _stat(pid: int) -> tuple[int, str] | None:
    """(parent pid, state) of a process, None once it is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return int(fields[1]), fields[0]


def descendants(root: int | None = None, skip: Collection[int] = ()) -> list[int]:
    """Live descendants of ``root`` (default: this process), zombies left out, and ``skip`` with everything
    below them (another sandbox's tree, which starts programs of its own meanwhile)."""
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
        if pid in skip:
            continue
        if states.get(pid) != "Z":
            out.append(pid)
        todo += children.get(pid, [])
    return sorted(out)


def alive(pid: int) -> bool:
    """Running, or stopped: not gone and not a zombie."""
    return (found := _stat(pid)) is not None and found[1] != "Z"


def describe(pid: int) -> str:
    """``pid command line`` for a report, as far as it can still be read."""
    try:
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        argv = "?"
    return f"{pid} {argv.strip()[:120]}"


def kill(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.kill(pid, signal.SIGKILL)


def terminate(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.kill(pid, signal.SIGTERM)


def reap() -> None:
    """Collect the zombies among our children (orphans the reaper adopted)."""
    for entry in os.listdir("/proc"):
        if entry.isdigit() and (found := _stat(int(entry))) and found[0] == os.getpid() and found[1] == "Z":
            with contextlib.suppress(ChildProcessError):
                os.waitpid(int(entry), os.WNOHANG)
