"""Deskpilot as a team without a checkout installs it (docs/client.md): the wheel built from a clean copy of
the repository, installed into a fresh venv outside it; then, from an empty folder with nothing of the
checkout on the Python path, `deskpilot --version`, `deskpilot install --with-deps` (twice: the second finds
nothing to do) and a two-test file under `pytest -n 2` on the default native sandbox: one sandbox per worker,
each run from the installed package. And the base install alone: every command answers, and those that need
the client extra say so."""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

import deskpilot
from deskpilot.client.native import free_display, free_port
from testbed.wheel import TWO_TESTS, build_wheel, fresh_venv, outside_env

pytestmark = [pytest.mark.e2e, pytest.mark.slow]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_wheel(tmp_path_factory.mktemp("dist"))


@pytest.fixture
def venv() -> Iterator[Path]:
    """Where the venv goes: not under tmp_path, whose 0700 parents would keep the appliance's users out."""
    base = Path(tempfile.mkdtemp(prefix="deskpilot-venv-"))
    try:
        yield base / "venv"
    finally:
        shutil.rmtree(base, ignore_errors=True)


def run(venv: Path, cwd: Path, *argv: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """A command of the venv, from ``cwd``, as CI runs it: no standard input, nothing of the checkout."""
    return subprocess.run(
        [str(venv / "bin" / argv[0]), *argv[1:]], cwd=cwd, env=outside_env(venv), stdin=subprocess.DEVNULL,
        capture_output=True, text=True, timeout=timeout,
    )  # fmt: skip


def test_from_pip_install_to_two_tests_in_parallel(wheel: Path, venv: Path, tmp_path: Path) -> None:
    fresh_venv(venv, f"{wheel}[client,server]", "pytest", "pytest-xdist")
    project = tmp_path / "project"
    project.mkdir()

    version = run(venv, project, "deskpilot", "--version")
    assert version.stdout.strip() == f"deskpilot {deskpilot.__version__}", version.stderr

    first = run(venv, project, "deskpilot", "install", "--with-deps", timeout=900)
    assert first.returncode == 0, first.stdout + first.stderr
    assert "install-system.sh: " in first.stdout and "deskpilot install: ready" in first.stdout
    again = run(venv, project, "deskpilot", "install", "--with-deps")
    assert again.returncode == 0, again.stdout + again.stderr
    assert "nothing to do" in again.stdout

    (project / "test_two.py").write_text(TWO_TESTS)
    done = run(venv, project, "python", "-m", "pytest", "-n", "2", "-p", "no:cacheprovider", "-q")
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert "2 passed" in done.stdout
    seen = [(project / name).read_text().split() for name in ("one.txt", "two.txt")]
    assert {worker for worker, _, _ in seen} == {"gw0", "gw1"}  # a test on each worker ...
    assert seen[0][1] != seen[1][1]  # ... each with its own sandbox
    (site,) = venv.glob("lib/python3*/site-packages")
    assert {root for _, _, root in seen} == {str(site / "deskpilot" / "_appliance")}
    assert sorted(p.name for p in project.iterdir()) == ["one.txt", "test_two.py", "two.txt"]


def test_every_command_answers_in_the_base_install(wheel: Path, venv: Path, tmp_path: Path) -> None:
    fresh_venv(venv, str(wheel))
    assert run(venv, tmp_path, "deskpilot", "--version").returncode == 0
    for command in ("eval", "replay", "install", "up"):
        shown = run(venv, tmp_path, "deskpilot", command, "--help")
        assert shown.returncode == 0 and "usage: deskpilot" in shown.stdout, shown.stderr

    (tmp_path / "suite.yaml").write_text("- id: one\n")
    ev = run(venv, tmp_path, "deskpilot", "eval", "suite.yaml", "--url", f"http://127.0.0.1:{free_port()}")
    assert ev.returncode == 2 and 'pip install "deskpilot[client]"' in ev.stderr, ev.stderr

    checked = run(venv, tmp_path, "deskpilot", "install")
    assert checked.returncode == 1 and 'pip install "deskpilot[server]"' in checked.stderr, checked.stderr
    # a display and ports of its own all the same, should it ever start
    settings = {"DESKPILOT_DISPLAY": free_display()} | {
        name: str(free_port()) for name in ("DESKTOP_PORT", "TASKS_PORT", "UI_PORT")
    }
    up = subprocess.run(
        [str(venv / "bin" / "deskpilot"), "up"], env=outside_env(venv) | settings, cwd=tmp_path,
        stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert up.returncode == 2 and 'pip install "deskpilot[server]"' in up.stderr, up.stderr
