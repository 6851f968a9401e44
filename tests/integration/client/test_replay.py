"""`deskpilot replay` on the session's real sandbox: a trajectory recorded on a prepared desktop replays to a
pass on the same desktop after a reset, and to exit 1 on one that differs by one thing a person would see (a
changed line of text in a terminal, a dialog, a window moved 20 px, another file on the Desktop), with its
recorded, replayed and diff frames written to --out, or to a new temporary folder, never the current one.
A screen that comes to match late passes within --timeout; a wait step is compared like the others.

The trajectories are written as the task service writes them (``TrajectoryWriter``), from real answers of
the desktop, each frame taken at rest (the agent's own recording is tests/integration/agent/
test_trajectory.py)."""

from __future__ import annotations

import re
import shlex
import shutil
import tempfile
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from deskpilot.cli import main
from deskpilot.client import Sandbox
from deskpilot.client.replay import replay
from deskpilot.computer.client import Desktop
from testbed.replay_controls import (
    DESKTOP_STEPS,
    DIALOG,
    LINES,
    TERMINAL_STEPS,
    WINDOW,
    Prepare,
    desk,
    terminal,
)
from testbed.replay_controls import record as record_steps

FRAMES = ["step-1-diff.png", "step-1-recorded.png", "step-1-replayed.png"]


def record(box: Sandbox, prepare: Prepare, steps: list[dict[str, Any]], path: Path) -> Path:
    """``steps`` acted on a reset desktop ``prepare`` made ready, written as a trajectory to ``path``."""
    box.reset()
    prepare(box.desktop)
    path.write_bytes(record_steps(box.desktop, steps))
    return path


@pytest.fixture(scope="module")
def recorded(box: Sandbox, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    # A sandbox's first terminal, launched after a screenshot, can stay without its title bar in the desktop's
    # screenshots while the X server shows it (stale capture rows): one launched first keeps that out of here.
    box.reset()
    box.desktop.application("terminal")
    folder = tmp_path_factory.mktemp("trajectories")
    return {
        "terminal": record(box, terminal(), TERMINAL_STEPS, folder / "terminal.zip"),
        "desktop": record(box, desk(), DESKTOP_STEPS, folder / "desktop.zip"),
        "wait": record(box, desk(), DESKTOP_STEPS[1:], folder / "wait.zip"),
    }


def run(box: Sandbox, archive: Path, prepare: Prepare, *args: str) -> int:
    box.reset()
    prepare(box.desktop)
    return main(["replay", str(archive), "--url", box.desktop_url, "--token", box.token or "", *args])


@pytest.mark.parametrize(("name", "prepare"), [("terminal", terminal()), ("desktop", desk())])
def test_a_trajectory_replays_on_the_desktop_it_was_recorded_on(
    box: Sandbox,
    recorded: dict[str, Path],
    name: str,
    prepare: Prepare,
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert run(box, recorded[name], prepare) == 0
    said = capsys.readouterr().out
    assert "2 of 2 steps replayed (0 skipped)" in said and "2 frames compared, 2 matched" in said, said
    assert "without a frame" not in said and "every frame" not in said


@pytest.mark.parametrize(
    ("name", "prepare", "inside"),
    [
        pytest.param(
            "terminal", terminal(LINES.replace("bravo", "delta")), (10, 100), id="a changed line of text"
        ),
        pytest.param(
            "desktop", desk("alpha.txt", WINDOW, (DIALOG, "Unexpected")), (1000, 560), id="a dialog open"
        ),
        pytest.param(
            "desktop",
            desk("alpha.txt", WINDOW.replace("+600", "+620")),
            (610, 320),
            id="a window moved 20 px",
        ),
        pytest.param("desktop", desk("bravo.txt"), (60, 770), id="another file on the Desktop"),
    ],
)
def test_a_desktop_that_differs_fails_with_its_frames_written_out(
    box: Sandbox,
    recorded: dict[str, Path],
    name: str,
    prepare: Prepare,
    inside: tuple[int, int],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    out = tmp_path / "out"
    assert run(box, recorded[name], prepare, "--out", str(out), "--timeout", "2") == 1
    said = capsys.readouterr().out
    assert "1 frame compared, 0 matched; step 1 diverged after 2." in said, said
    where = re.search(r"from x=(\d+),y=(\d+), (\d+)x(\d+) px", said)
    assert where, said
    x, y, w, h = (int(v) for v in where.groups())  # the differing tiles, in screen pixels
    assert x <= inside[0] < x + w and y <= inside[1] < y + h, said
    assert sorted(p.name for p in out.iterdir()) == FRAMES
    for frame in FRAMES:
        assert Image.open(out / frame).size == (1280, 720)
    assert str(out / "step-1-diff.png") in said.splitlines()
    diff = Image.open(out / "step-1-diff.png").convert("RGB")
    assert (255, 0, 0) in {colour for _, colour in diff.getcolors(1 << 20) or []}  # its differing pixels


def test_without_out_the_frames_go_to_a_new_temporary_folder(
    box: Sandbox,
    recorded: dict[str, Path],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    assert run(box, recorded["desktop"], desk("bravo.txt"), "--timeout", "1") == 1
    files = [Path(line) for line in capsys.readouterr().out.splitlines() if line.endswith(".png")]
    try:
        assert sorted(f.name for f in files) == FRAMES and all(f.is_file() for f in files)
        folder = files[0].parent
        assert folder.parent == Path(tempfile.gettempdir()) and folder.name.startswith("deskpilot-replay-")
        assert list(cwd.iterdir()) == []
    finally:
        for f in files:
            shutil.rmtree(f.parent, ignore_errors=True)


def test_a_wait_step_is_compared(
    box: Sandbox, recorded: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run(box, recorded["wait"], desk()) == 0
    assert "1 of 1 steps replayed (0 skipped)" in (said := capsys.readouterr().out)
    assert "1 frame compared, 1 matched" in said, said
    dialog = desk("alpha.txt", WINDOW, (DIALOG, "Unexpected"))
    assert run(box, recorded["wait"], dialog, "--out", str(tmp_path), "--timeout", "1") == 1
    assert "step 1 diverged" in (said := capsys.readouterr().out) and "'action': 'wait'" in said


def test_a_screen_that_comes_to_match_late_passes_within_the_timeout(
    box: Sandbox, recorded: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    def late(desktop: Desktop) -> None:  # the window shows a second after the replay starts
        desktop.command("touch ~/Desktop/alpha.txt")
        start = "import subprocess, sys; subprocess.Popen(['sh', '-c', 'sleep 1; exec ' + sys.argv[1]], "
        start += "start_new_session=True, stdin=-3, stdout=-3, stderr=-3)"
        desktop.command(f"python3 -c {shlex.quote(start)} {shlex.quote(WINDOW)}")

    assert run(box, recorded["desktop"], late) == 0
    assert "2 frames compared, 2 matched (1 after waiting)" in capsys.readouterr().out
    assert run(box, recorded["desktop"], late, "--timeout", "0.2", "--out", str(tmp_path)) == 1
    assert "step 1 diverged" in capsys.readouterr().out


def test_a_mask_over_the_difference_lets_it_pass(box: Sandbox, recorded: dict[str, Path]) -> None:
    box.reset()
    desk("bravo.txt")(box.desktop)
    first = replay(recorded["desktop"], box.desktop, timeout=1, keep_going=True)
    assert first.divergence is not None and first.divergence.where is not None
    assert first.divergence.files == []  # keep_going and no out: nothing written
    x, y, w, h = first.divergence.where  # the file's icon and name, in screen pixels
    assert x < 200 and y > 500
    box.reset()
    desk("bravo.txt")(box.desktop)
    masked = replay(recorded["desktop"], box.desktop, timeout=1, masks=((x - 8, y - 8, w + 16, h + 16),))
    assert masked.passed and masked.compared == 2


@pytest.mark.parametrize(
    "bad",
    [
        ["--mask", "1,2,3"],
        ["--mask", "0,0,0,10"],
        ["--timeout", "-1"],
        ["--tolerance", "2"],
        ["--threshold", "x"],
    ],
)
def test_bad_options_are_bad_usage(bad: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["replay", "run.zip", "--url", "http://127.0.0.1:9", *bad])
    assert exited.value.code == 2 and bad[0] in capsys.readouterr().err
