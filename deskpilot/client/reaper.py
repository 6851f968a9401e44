"""The parent of a native sandbox's launcher: a child subreaper of its own, so that whatever the appliance
leaves running, even a daemon that double-forked, is adopted here and nowhere else.

    python -m deskpilot.client.reaper [--linger SECONDS] [--quick-stop] LEFTOVERS -- scripts/appliance.sh

It starts the command, passes SIGTERM and SIGINT on to it, and when the command has ended waits (bounded)
for the processes it adopted to end too; those still running are killed and written to LEFTOVERS, one
``pid command line`` a line. Its exit status is the command's. The caller (``native.NativeAppliance``) is
never a subreaper: its own children keep their parent, and their exit status is theirs to collect.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from types import FrameType

from deskpilot.client import processes

PR_SET_CHILD_SUBREAPER = 36
LINGER_S = 10.0  # for what the appliance left to end by itself once the launcher ended
POLL_S = 0.05


def become_subreaper() -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_CHILD_SUBREAPER)")


def run(argv: Sequence[str], leftovers: Path, linger: float = LINGER_S, quick: bool = False) -> int:
    """With ``quick``, a stop signal reaches every process of the tree at once, and the command
    (supervisord) is killed once nothing else of the tree is left: supervisord stops one priority group per
    turn of its loop, about a second each, which made a sandbox's stop take 6-9 s when its programs take
    well under one. supervisord gets the signal first, so it never restarts what ends."""
    become_subreaper()
    child = subprocess.Popen(list(argv))
    stopping = False

    def forward(signum: int, _frame: FrameType | None) -> None:
        nonlocal stopping
        with contextlib.suppress(ProcessLookupError):
            child.send_signal(signum)
        if quick and not stopping:
            for pid in processes.descendants():
                if pid != child.pid:
                    processes.terminate(pid)
        stopping = True

    signal.signal(signal.SIGTERM, forward)
    signal.signal(signal.SIGINT, forward)
    while (code := child.poll()) is None:
        if quick and stopping and not [pid for pid in processes.descendants() if pid != child.pid]:
            child.kill()  # its programs are gone: what is left of its ordered stop is waiting
            child.wait()
            code = 0  # the stop asked for, done
            break
        time.sleep(POLL_S)  # (no reaping here: the command's own status is Popen's to collect)
    deadline = time.monotonic() + linger
    while (alive := processes.descendants()) and time.monotonic() < deadline:
        processes.reap()
        time.sleep(0.1)
    left = [processes.describe(pid) for pid in alive]
    for pid in alive:
        processes.kill(pid)
    processes.reap()
    leftovers.write_text("".join(f"{line}\n" for line in left))
    return code


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m deskpilot.client.reaper", description=__doc__)
    parser.add_argument("leftovers", type=Path, help="where to list what was still running at the end")
    parser.add_argument("--linger", type=float, default=LINGER_S, help="seconds to wait for the adopted")
    parser.add_argument("--quick-stop", action="store_true", help="stop every process at once (run's doc)")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="-- the command to run")
    args = parser.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("no command given")
    sys.exit(run(command, args.leftovers, args.linger, args.quick_stop))


if __name__ == "__main__":
    main()
