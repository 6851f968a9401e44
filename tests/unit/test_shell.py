"""Shell run by the image build and `make run`: shellcheck-clean, and the Dockerfile stays a thin wrapper."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SHELLCHECK = shutil.which("shellcheck")


def dockerfile_run_steps(path: Path = ROOT / "Dockerfile") -> list[str]:
    """The shell of every RUN instruction (shell form, after its --mount=... options), continuation lines
    joined as Docker joins them."""
    text = re.sub(r"\\\n", " ", path.read_text())
    steps = []
    for line in text.splitlines():
        m = re.match(r"\s*RUN\s+(?:--[a-z-]+=\S+\s+)*(.*)", line)
        if m and not m.group(1).lstrip().startswith("["):
            steps.append(m.group(1).strip())
    return steps


def shellcheck(*args: str) -> subprocess.CompletedProcess:
    assert SHELLCHECK, "shellcheck is missing: run `make system-test`"
    return subprocess.run([SHELLCHECK, *args], capture_output=True, text=True)


def test_dockerfile_run_steps_pass_shellcheck(tmp_path: Path) -> None:
    steps = dockerfile_run_steps()
    assert steps, "no RUN steps found"
    for i, step in enumerate(steps):
        script = tmp_path / f"run{i}.sh"
        # Docker runs shell-form RUN with /bin/sh -c, with the ENV of the Dockerfile set.
        script.write_text(f"#!/bin/sh\n{step}\n")
        result = shellcheck("--shell=sh", str(script))
        assert result.returncode == 0, f"RUN {step}\n{result.stdout}"


def test_the_run_step_check_catches_a_real_mistake(tmp_path: Path) -> None:
    dockerfile = tmp_path / "Dockerfile"
    dockerfile.write_text("FROM x\nRUN cd $dir && \\\n    rm -rf $dir/*\n")
    [step] = dockerfile_run_steps(dockerfile)
    script = tmp_path / "run.sh"
    script.write_text(f"#!/bin/sh\n{step}\n")
    assert "SC2086" in shellcheck("--shell=sh", str(script)).stdout  # unquoted $dir


def test_dockerfile_is_a_thin_wrapper_over_the_install_scripts() -> None:
    steps = " ".join(dockerfile_run_steps())
    assert "scripts/install-system.sh" in steps and "scripts/install-python.sh" in steps
    assert "apt-get install" not in steps and "pip install" not in steps, "install through the scripts"
    text = (ROOT / "Dockerfile").read_text()
    assert re.search(r"^FROM debian:bookworm-slim$", text, re.M)
    assert re.search(r"^EXPOSE 9990 9991 9992$", text, re.M)
    assert "HEALTHCHECK" in text and "/health" in text
    assert '"/home/user"' in text and '"/var/lib/deskpilot"' in text
    assert 'CMD ["/opt/deskpilot/scripts/appliance.sh"]' in text


@pytest.mark.parametrize(
    "script",
    sorted([*ROOT.glob("scripts/*.sh"), *ROOT.glob("bench/peers/*.sh"), ROOT / ".ci" / "run"]),
    ids=lambda p: p.name,
)
def test_scripts_pass_shellcheck_and_are_executable(script: Path) -> None:
    result = shellcheck("--external-sources", str(script))
    assert result.returncode == 0, result.stdout
    assert script.stat().st_mode & 0o111, f"{script.name} must be executable"


def test_make_test_runs_the_whole_suite_and_each_target_is_defined_once() -> None:
    # -n prints the recipes (the target's and its prerequisites') without running them
    result = subprocess.run(["make", "-n", "test"], cwd=ROOT, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    # a second rule for a target replaces the first one's recipe with only a warning
    assert "overriding recipe" not in result.stderr, result.stderr
    pytest_lines = [line for line in result.stdout.splitlines() if "pytest" in line.split("/")[-1]]
    assert pytest_lines, result.stdout
    assert all(" -m " not in line and "tests/" not in line for line in pytest_lines), pytest_lines
    targets = re.findall(r"^([a-z-]+):", (ROOT / "Makefile").read_text(), re.M)
    assert sorted(targets) == sorted(set(targets)), "a target defined twice"
    assert "image-test" in targets


def test_the_launcher_hands_the_task_service_exactly_the_providers_variables() -> None:
    """The launcher's list of provider variables (scripts/appliance.sh) is deskpilot.config.PROVIDERS, no
    more: a provider added to the table reaches the task service, and no other variable ending in _API_KEY
    does."""
    from deskpilot.config import PROVIDERS

    launcher = (ROOT / "scripts" / "appliance.sh").read_text()
    patterns = re.findall(r"^take '([^']+)' tasks_env", launcher, re.MULTILINE)
    handed = [re.compile(f"^({p})$") for p in patterns]
    for provider in PROVIDERS:
        for name in (provider.key_var, provider.model_var):
            assert any(p.match(name) for p in handed), f"{name} ({provider.name}) is not handed on"
    named = re.compile(r"^take '\(([A-Z|]+)\)_\(API_KEY\|MODEL\)' tasks_env", re.MULTILINE).search(launcher)
    assert named, "the launcher names the providers in one pattern: (NAME|...)_(API_KEY|MODEL)"
    prefixes = {p.key_var.removesuffix("_API_KEY") for p in PROVIDERS if p.key_var.endswith("_API_KEY")}
    assert set(named.group(1).split("|")) == prefixes
