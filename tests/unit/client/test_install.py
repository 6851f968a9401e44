"""Where the appliance's files are found (the installed package's copy, else the checkout), and the CLI's
answer when a command needs the client extra."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from deskpilot import cli
from deskpilot.client import native


def test_the_installed_copy_is_preferred_to_the_checkout(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    package = tmp_path / "site-packages" / "deskpilot"
    monkeypatch.setattr(native, "PACKAGE", package)
    assert native.appliance_root() == tmp_path / "site-packages"  # no copy: the checkout the package is in
    launcher = package / "_appliance" / native.LAUNCHER
    launcher.parent.mkdir(parents=True)
    launcher.write_text("#!/bin/sh\n")
    assert native.appliance_root() == package / "_appliance"


def test_this_checkout_runs_its_own_files() -> None:
    assert (native.ROOT / native.LAUNCHER).is_file() and (native.ROOT / "supervisord.conf").is_file()


@pytest.mark.parametrize(("module", "package"), [("PIL", "Pillow"), ("yaml", "PyYAML")])
def test_a_command_without_the_client_extra_says_which_to_install(
    module: str, package: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def needs(args: argparse.Namespace) -> int:
        raise ModuleNotFoundError(f"No module named {module!r}", name=module)

    monkeypatch.setattr(cli, "replay_command", needs)
    assert cli.run(argparse.Namespace(command="replay")) == 2
    err = capsys.readouterr().err
    assert err == f'deskpilot replay: needs {package}, of the client extra: pip install "deskpilot[client]"\n'


def test_another_missing_module_is_not_hidden(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(args: argparse.Namespace) -> int:
        raise ModuleNotFoundError("No module named 'nothere'", name="nothere")

    monkeypatch.setattr(cli, "replay_command", broken)
    with pytest.raises(ModuleNotFoundError):
        cli.run(argparse.Namespace(command="replay"))
