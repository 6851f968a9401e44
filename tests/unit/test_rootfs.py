"""What the appliance lays over the system and the home (launchers, Xfce settings, policies) and runs."""

from __future__ import annotations

import configparser
import itertools
import json
import shlex
import subprocess
import xml.dom.minidom
from pathlib import Path

import pytest

from testbed.appliance import PROGRAMS

ROOT = Path(__file__).resolve().parents[2]
SKEL = ROOT / "rootfs" / "home" / "user"
LAUNCHERS = sorted((SKEL / "Desktop").glob("*.desktop"))
IDENTIFIERS = {"browser", "password_manager", "email_client", "code_editor", "terminal", "directory"}


def desktop_entry(path: Path) -> configparser.SectionProxy:
    parser = configparser.ConfigParser(interpolation=None)
    parser.optionxform = str  # type: ignore[method-assign, assignment]  # keys are case-sensitive (the documented way)
    parser.read(path)
    return parser["Desktop Entry"]


def exec_argv(path: Path) -> tuple[str, ...]:
    """Exec= without the field codes (%u, %F, ...) a launcher fills in."""
    return tuple(a for a in shlex.split(desktop_entry(path)["Exec"]) if not a.startswith("%"))


def test_one_launcher_per_application_identifier() -> None:
    assert {p.stem for p in LAUNCHERS} == IDENTIFIERS
    for p in LAUNCHERS:
        assert desktop_entry(p)["X-Deskpilot-Application"] == p.stem


@pytest.mark.parametrize("launcher", LAUNCHERS, ids=lambda p: p.stem)
def test_launcher_is_a_valid_trusted_desktop_entry(launcher: Path) -> None:
    result = subprocess.run(["desktop-file-validate", str(launcher)], capture_output=True, text=True)
    assert result.returncode == 0 and "error" not in result.stdout, result.stdout
    assert launcher.stat().st_mode & 0o111, "xfdesktop only runs executable launchers without asking"
    entry = desktop_entry(launcher)
    assert entry["Type"] == "Application" and entry["Name"] and entry["Icon"]


@pytest.mark.parametrize("channel", sorted((SKEL / ".config/xfce4/xfconf/xfce-perchannel-xml").glob("*.xml")))
def test_xfconf_channels_are_well_formed(channel: Path) -> None:
    doc = xml.dom.minidom.parse(str(channel))
    assert doc.documentElement is not None
    assert doc.documentElement.getAttribute("name") == channel.stem


def test_panel_config_exists_so_the_panel_never_asks_on_first_start() -> None:
    assert (SKEL / ".config/xfce4/xfconf/xfce-perchannel-xml/xfce4-panel.xml").exists()


@pytest.mark.parametrize("app", ["firefox", "thunderbird"])
def test_app_policies_turn_off_updates_and_telemetry(app: str) -> None:
    policies = json.loads((ROOT / "rootfs" / "etc" / app / "policies" / "policies.json").read_text())[
        "policies"
    ]
    assert policies["DisableAppUpdate"] is True
    assert policies["DisableTelemetry"] is True
    assert policies["OverrideFirstRunPage"] == ""


def supervisord_programs() -> dict[str, configparser.SectionProxy]:
    parser = configparser.RawConfigParser()
    parser.read(ROOT / "supervisord.conf")
    return {s.split(":", 1)[1]: parser[s] for s in parser.sections() if s.startswith("program:")}


def test_the_session_runs_as_the_desktop_user_the_display_and_the_services_as_system_users() -> None:
    users = {
        "desktop-api": "%(ENV_DESKPILOT_DESKTOP_RUNS_AS)s",  # the display's owner, or root (appliance.sh)
        "xvfb": "%(ENV_DESKPILOT_DESKTOP_RUNS_AS)s",  # it attaches the desktop service's SHM segments
        "x11vnc": "%(ENV_DESKPILOT_DESKTOP_RUNS_AS)s",  # its socket is in the display owner's directory
        "hands": "%(ENV_DESKPILOT_HANDS_RUNS_AS)s",  # the desktop user, or root
        "task-api": "%(ENV_DESKPILOT_TASKS_RUNS_AS)s",  # deskpilot, or root
        "ui": "%(ENV_DESKPILOT_TASKS_RUNS_AS)s",
    }
    for name, p in supervisord_programs().items():
        assert p["user"] == users.get(name, "%(ENV_DESKPILOT_USER)s"), name


def test_every_program_restarts_and_logs_to_stdout() -> None:
    programs = supervisord_programs()
    assert set(programs) == set(PROGRAMS)
    for name, p in programs.items():
        assert p["autorestart"] == "true", name
        assert (p["stdout_logfile"], p["stdout_logfile_maxbytes"], p["redirect_stderr"]) == (
            "/dev/stdout",
            "0",
            "true",
        ), name


def test_the_services_get_their_own_environment_and_x_clients_wait_for_the_display() -> None:
    """supervisord passes its own environment (the launcher's minimal one) to the session; each service gets
    its file's."""
    parser = configparser.RawConfigParser()
    parser.read(ROOT / "supervisord.conf")
    assert not [s for s in parser.sections() if parser.has_option(s, "environment")]
    programs = supervisord_programs()
    for name in ("desktop-api", "task-api", "ui", "hands", "x11vnc"):
        wrapper = f"%(ENV_DESKPILOT_RUN_DIR)s/with-env.sh %(ENV_DESKPILOT_RUN_DIR)s/env/{name}"
        assert programs[name]["command"].startswith(wrapper), name
    for name in ("xfwm4", "xfdesktop", "xfce4-panel"):
        assert programs[name]["command"].startswith("%(ENV_DESKPILOT_RUN_DIR)s/with-x.sh "), name
    x11vnc = programs["x11vnc"]["command"].split()
    assert "%(ENV_DESKPILOT_RUN_DIR)s/with-x.sh" in x11vnc
    # no TCP listener at all: a Unix socket in the display owner's directory
    assert {("-rfbport", "0"), ("-rfbportv6", "0")} <= set(itertools.pairwise(x11vnc))
    assert x11vnc[x11vnc.index("-unixsock") + 1] == "%(ENV_DESKPILOT_RUN_DIR)s/display/vnc.sock"
    xvfb = programs["xvfb"]["command"].split()
    assert "1920x1080x24" in xvfb
    assert "-s 0 -dpms" in " ".join(xvfb)  # no screen saver, no power saving
    # only cookie holders connect
    assert xvfb[xvfb.index("-auth") + 1] == "%(ENV_DESKPILOT_RUN_DIR)s/display/Xauthority"
    assert {("-nolisten", "tcp"), ("-nolisten", "local")} <= set(itertools.pairwise(xvfb))


def test_the_desktop_service_in_tests_and_benches_has_the_appliances_websocket_settings() -> None:
    from testbed.desktop_process import WEBSOCKETS

    assert " ".join(WEBSOCKETS) in " ".join(supervisord_programs()["desktop-api"]["command"].split())


def test_launchers_run_the_same_commands_as_the_desktop_service() -> None:
    """The Desktop icons and `POST /computer-use {"action": "application"}` start the same programs."""
    from deskpilot.desktop.apps import APPLICATIONS

    assert {p.stem for p in LAUNCHERS} == set(APPLICATIONS)
    for p in LAUNCHERS:
        assert exec_argv(p) == APPLICATIONS[p.stem].argv, p.name
