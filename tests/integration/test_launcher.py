"""scripts/appliance.sh decides who runs the programs by trying, as each user, to read the code, and which
token the services require."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SECURITY = ("DESKPILOT_TOKEN", "DESKPILOT_TOKEN_SHA256", "DESKPILOT_AUTH", "DESKPILOT_HOST")


def launcher(checkout: Path, **env: str) -> subprocess.CompletedProcess[str]:
    """appliance.sh --print-config, in this environment less the developer's own security settings."""
    base = {k: v for k, v in os.environ.items() if k.upper() not in SECURITY}
    return subprocess.run(
        [str(checkout / "scripts" / "appliance.sh"), "--print-config"],
        env={**base, "DESKPILOT_VENV": str(ROOT / ".venv"), **env},
        capture_output=True,
        text=True,
        timeout=30,
    )


def print_config(checkout: Path, **env: str) -> tuple[dict[str, str], str]:
    out = launcher(checkout, **env)
    assert out.returncode == 0, out.stderr
    return dict(line.split("=", 1) for line in out.stdout.splitlines()), out.stderr


def test_a_checkout_every_user_can_read_runs_each_program_as_its_user() -> None:
    config, stderr = print_config(ROOT)
    assert config["DESKPILOT_HANDS_RUNS_AS"] == config["DESKPILOT_USER"] == "user"
    assert config["DESKPILOT_DESKTOP_RUNS_AS"] == config["DESKPILOT_DISPLAY_USER"] == "deskpilot-display"
    assert config["DESKPILOT_TASKS_RUNS_AS"] == config["DESKPILOT_TASKS_USER"] == "deskpilot"
    assert "WARNING" not in stderr


def test_an_unreadable_checkout_falls_back_to_root_and_says_so(tmp_path: Path) -> None:
    private = tmp_path / "private"  # like /root: 0700, neither user can enter it
    private.mkdir(mode=0o700)
    checkout = private / "deskpilot"
    checkout.mkdir()
    shutil.copytree(ROOT / "scripts", checkout / "scripts")
    shutil.copy(ROOT / "supervisord.conf", checkout)
    config, stderr = print_config(checkout)
    runs_as = {config[f"DESKPILOT_{who}_RUNS_AS"] for who in ("HANDS", "DESKTOP", "TASKS")}
    assert runs_as == {"root"}
    warning = " ".join(line.removeprefix("deskpilot: WARNING: ") for line in stderr.splitlines())
    assert f"'user' and 'deskpilot-display' and 'deskpilot' cannot read {checkout}" in warning
    programs = "the desktop user's worker, the desktop service, Xvfb and x11vnc, the task service and the UI"
    assert f"{programs} run as ROOT" in warning


def test_defaults_are_the_production_ones_and_the_environment_overrides_them() -> None:
    config, _ = print_config(ROOT)
    assert (config["DESKPILOT_DISPLAY"], config["DESKTOP_PORT"], config["TASKS_PORT"], config["UI_PORT"]) == (
        ":0",
        "9990",
        "9991",
        "9992",
    )
    assert config["TASKS_DATABASE_URL"] == "sqlite+aiosqlite:////var/lib/deskpilot/agent.db"
    config, _ = print_config(ROOT, DESKPILOT_DISPLAY=":57", DESKTOP_PORT="1999", DESKPILOT_STATE_DIR="/srv/s")
    assert (config["DESKPILOT_DISPLAY"], config["DESKTOP_PORT"]) == (":57", "1999")
    assert config["TASKS_DATABASE_URL"] == "sqlite+aiosqlite:////srv/s/agent.db"
    config, _ = print_config(ROOT, TASKS_DATABASE_URL="postgresql://deskpilot:pw-of-the-db@db:5432/tasks")
    assert config["TASKS_DATABASE_URL"] == "postgresql://deskpilot:***@db:5432/tasks"


@pytest.mark.parametrize(
    ("env", "source"),
    [
        ({}, "none"),  # make run: loopback only
        ({"DESKPILOT_HOST": "localhost"}, "none"),
        ({"DESKPILOT_HOST": "::1"}, "none"),
        ({"DESKPILOT_HOST": "0.0.0.0"}, "file"),  # the image: generated into the state dir
        ({"DESKPILOT_HOST": "10.1.2.3"}, "file"),
        ({"DESKPILOT_HOST": "0.0.0.0", "DESKPILOT_TOKEN": "a-given-token-of-enough-length"}, "environment"),
        ({"DESKPILOT_TOKEN": "a-given-token-of-enough-length"}, "environment"),
        ({"DESKPILOT_HOST": "0.0.0.0", "DESKPILOT_AUTH": "off"}, "off"),
    ],
)
def test_the_token_is_given_generated_none_or_off(env: dict[str, str], source: str) -> None:
    config, stderr = print_config(ROOT, **env)
    assert config["DESKPILOT_TOKEN_SOURCE"] == source
    if source == "none":
        assert "no token: anyone on this machine can use the desktop; set DESKPILOT_TOKEN" in stderr
    if source == "off":
        assert "WARNING: DESKPILOT_AUTH=off: no service requires a token" in stderr
    assert "a-given-token" not in stderr + "".join(f"{k}={v}" for k, v in config.items())


@pytest.mark.parametrize(
    ("env", "reason"),
    [
        ({"DESKPILOT_AUTH": "maybe"}, "DESKPILOT_AUTH must be on or off"),
        ({"DESKPILOT_TOKEN_SHA256": "ab" * 32}, "the appliance needs DESKPILOT_TOKEN"),
        ({"DESKPILOT_TASKS_USER": "no-such-user-here"}, "the user 'no-such-user-here' does not exist"),
    ],
)
def test_a_setting_it_cannot_use_stops_the_launcher_with_the_reason(env: dict[str, str], reason: str) -> None:
    out = launcher(ROOT, **env)
    assert out.returncode == 1 and reason in out.stderr, out.stderr
