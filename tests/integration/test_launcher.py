"""scripts/appliance.sh decides who runs the programs by trying, as the desktop user, to read the code."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def print_config(checkout: Path, **env: str) -> tuple[dict[str, str], str]:
    out = subprocess.run(
        [str(checkout / "scripts" / "appliance.sh"), "--print-config"],
        env={**os.environ, "DESKPILOT_VENV": str(ROOT / ".venv"), **env},
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert out.returncode == 0, out.stderr
    return dict(line.split("=", 1) for line in out.stdout.splitlines()), out.stderr


def test_a_checkout_the_desktop_user_can_read_runs_the_programs_as_that_user() -> None:
    config, stderr = print_config(ROOT)
    assert config["DESKPILOT_SERVICE_USER"] == "user"
    assert "WARNING" not in stderr


def test_an_unreadable_checkout_falls_back_to_root_and_says_so(tmp_path: Path) -> None:
    private = tmp_path / "private"  # like /root: 0700, the desktop user cannot enter it
    private.mkdir(mode=0o700)
    checkout = private / "deskpilot"
    checkout.mkdir()
    shutil.copytree(ROOT / "scripts", checkout / "scripts")
    shutil.copy(ROOT / "supervisord.conf", checkout)
    config, stderr = print_config(checkout)
    assert config["DESKPILOT_SERVICE_USER"] == "root"
    assert "WARNING" in stderr and "ROOT" in stderr and str(checkout) in stderr


def test_defaults_are_the_production_ones_and_the_environment_overrides_them() -> None:
    config, _ = print_config(ROOT)
    assert (config["DESKPILOT_DISPLAY"], config["DESKTOP_PORT"], config["AGENT_PORT"], config["UI_PORT"]) == (
        ":0",
        "9990",
        "9991",
        "9992",
    )
    assert config["AGENT_DATABASE_URL"] == "sqlite+aiosqlite:////var/lib/deskpilot/agent.db"
    config, _ = print_config(ROOT, DESKPILOT_DISPLAY=":57", DESKTOP_PORT="1999", DESKPILOT_STATE_DIR="/srv/s")
    assert (config["DESKPILOT_DISPLAY"], config["DESKTOP_PORT"]) == (":57", "1999")
    assert config["AGENT_DATABASE_URL"] == "sqlite+aiosqlite:////srv/s/agent.db"
