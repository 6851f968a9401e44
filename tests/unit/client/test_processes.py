"""Which adopted processes a native sandbox may call its own: not those whose environment names another
appliance's run directory or display (deskpilot/client/processes.py), read from real processes."""

from __future__ import annotations

import os
import subprocess

from deskpilot.client import processes


def test_a_process_naming_another_display_is_foreign_and_one_naming_none_is_not() -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "DESKPILOT_RUN_DIR")}
    other = subprocess.Popen(["sleep", "30"], env={**env, "DISPLAY": ":321"})
    plain = subprocess.Popen(["sleep", "30"], env=env)
    try:
        assert processes.foreign(other.pid, {"DISPLAY": ":5", "DESKPILOT_RUN_DIR": "/run/x"})
        assert not processes.foreign(other.pid, {"DISPLAY": ":321"})
        assert not processes.foreign(plain.pid, {"DISPLAY": ":5", "DESKPILOT_RUN_DIR": "/run/x"})
        assert processes.environment(plain.pid).get("DISPLAY") is None
    finally:
        for p in (other, plain):
            p.kill()
            p.wait()
