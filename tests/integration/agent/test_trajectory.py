"""A task's trajectory, end to end: a scripted model runs a task on a real desktop through the real agent
loop; GET /tasks/{id}/trajectory downloads its steps and frames; `deskpilot replay` replays it on the same
desktop and every frame it has matches, the wait's too (a refused step has none, and is counted apart); once
the desktop has changed (a window opened over it), the replay stops at the first step, with the recorded,
replayed and diff frames written out. (The replay's verdicts on desktops that differ by less:
tests/integration/client/test_replay.py.)"""

from __future__ import annotations

import io
import subprocess
import time
import zipfile
from pathlib import Path

import orjson
import pytest
from PIL import Image

from deskpilot.cli import main
from deskpilot.scripted import Answer, Request, ScriptedModel, tool
from testbed.agent_loop import Agent, desktop_action
from testbed.xvfb import Display


def recorded(agent: Agent, scripted_llm: ScriptedModel, tmp_path: Path) -> Path:
    scripted_llm.play(
        [
            tool("computer_move_mouse", coordinates={"x": 1200, "y": 700}),
            tool("computer_wait", duration=50),
            tool("computer_type_keys", keys=["no-such-key"]),  # refused: replays as a refusal
            tool("computer_scroll", coordinates={"x": 1250, "y": 710}, direction="down", scrollCount=1),
            tool("zoom", x=0, y=0, width=320, height=180),
            tool("computer_move_mouse", coordinates={"x": 10, "y": 10}, inZoom=True),
            tool("set_task_status", status="completed", description="moved"),
        ]
    )
    task = agent.wait(agent.create("Move the pointer around")["id"])
    assert task["status"] == "COMPLETED"
    r = agent.client.get(f"/tasks/{task['id']}/trajectory")
    assert r.status_code == 200 and r.headers["content-type"] == "application/zip"
    assert f"trajectory-{task['id']}.zip" in r.headers["content-disposition"]
    path = tmp_path / "trajectory.zip"
    path.write_bytes(r.content)
    return path


def test_a_recorded_task_downloads_and_replays_on_the_desktop(
    agent: Agent,
    scripted_llm: ScriptedModel,
    tmp_path: Path,
    desktop_url: str,
    loop_display: Display,
    capsys: pytest.CaptureFixture[str],
) -> None:
    archive = recorded(agent, scripted_llm, tmp_path)
    with zipfile.ZipFile(archive) as z:
        header, *steps = [orjson.loads(line) for line in z.read("trajectory.jsonl").splitlines()]
        assert header["format"] == "deskpilot-trajectory/1" and header["steps"] == 5 == len(steps)
        names = [s["action"]["action"] for s in steps]
        assert names == ["move_mouse", "wait", "type_keys", "scroll", "move_mouse"]
        assert steps[2]["outcome"]["error"] is True
        first = steps[0]
        assert first["actor"] == "agent" and first["action"]["space"] == {"width": 1280}
        assert first["action"]["coordinates"] == {"x": 1200, "y": 700} and first["frameBefore"] is None
        assert steps[1]["frameBefore"] == first["frameAfter"]
        assert steps[4]["replay"] is False and "space" not in steps[4]["action"]  # pointed into a zoom
        frame = Image.open(io.BytesIO(z.read(f"frames/{first['frameAfter']}.png")))
        assert frame.size == (1280, 720)
        assert len([n for n in z.namelist() if n.startswith("frames/")]) <= len(steps)  # each frame once

    # the same desktop, unchanged: each of the three frames matches, the wait's included
    assert main(["replay", str(archive), "--url", desktop_url]) == 0
    said = capsys.readouterr().out
    assert "4 of 5 steps replayed (1 skipped)" in said
    assert "3 frames compared, 3 matched" in said and "1 step without a frame" in said, said

    # a window over the desktop: the first step diverges, with its frames written out
    window = subprocess.Popen(["xterm", "-geometry", "120x40+200+150", "-bg", "red"], env=loop_display.env)
    try:
        time.sleep(1.5)
        out = tmp_path / "diverged"
        assert main(["replay", str(archive), "--url", desktop_url, "--out", str(out), "--timeout", "1"]) == 1
        said = capsys.readouterr().out
        assert "1 frame compared, 0 matched; step 1 diverged" in said
        files = sorted(p.name for p in out.iterdir())
        assert files == ["step-1-diff.png", "step-1-recorded.png", "step-1-replayed.png"]
        diff = Image.open(out / "step-1-diff.png").convert("RGB")
        assert diff.getpixel((400, 300)) == (255, 0, 0)  # where the window is
    finally:
        window.terminate()
        window.wait(5)


def test_another_clients_action_during_the_run_is_a_step_of_the_trajectory_and_replays(
    agent: Agent,
    scripted_llm: ScriptedModel,
    tmp_path: Path,
    desktop_url: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    def meanwhile(req: Request) -> Answer:
        # while the model thinks, an API client of the same desktop moves the pointer
        assert desktop_action(desktop_url, "move_mouse", coordinates={"x": 640, "y": 360}).status_code == 200
        return tool("computer_wait", duration=800)  # the journal takes its frame once input is quiet

    scripted_llm.play(
        [
            tool("computer_move_mouse", coordinates={"x": 100, "y": 100}),
            meanwhile,
            tool("set_task_status", status="completed", description="shared"),
        ]
    )
    task = agent.wait(agent.create("Share the desktop")["id"])
    assert task["status"] == "COMPLETED"
    r = agent.client.get(f"/tasks/{task['id']}/trajectory")
    assert r.status_code == 200
    archive = tmp_path / "shared.zip"
    archive.write_bytes(r.content)
    with zipfile.ZipFile(archive) as z:
        header, *steps = [orjson.loads(line) for line in z.read("trajectory.jsonl").splitlines()]
    assert [(s["actor"], s["action"]["action"]) for s in steps] == [
        ("agent", "move_mouse"),
        ("api", "move_mouse"),
        ("agent", "wait"),
    ]
    assert header["steps"] == 3 and [s["step"] for s in steps] == [1, 2, 3]
    api = steps[1]
    assert api["action"]["coordinates"] == {"x": 640, "y": 360} and api["frameAfter"]
    assert api["frameBefore"] == steps[0]["frameAfter"] and steps[2]["frameBefore"] == api["frameAfter"]
    assert main(["replay", str(archive), "--url", desktop_url]) == 0, capsys.readouterr().out


def test_an_unknown_task_or_archive_is_a_clear_error(
    agent: Agent, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    r = agent.client.get("/tasks/nope/trajectory")
    assert r.status_code == 404 and "nope" in r.json()["message"]
    bad = tmp_path / "bad.zip"
    bad.write_bytes(b"not a zip")
    assert main(["replay", str(bad), "--url", "http://127.0.0.1:9"]) == 2
    assert "bad.zip" in capsys.readouterr().err


def test_the_trajectory_comes_with_an_mp4_of_its_frames_on_request(
    agent: Agent, scripted_llm: ScriptedModel, tmp_path: Path
) -> None:
    scripted_llm.play(
        [
            tool("computer_move_mouse", coordinates={"x": 100, "y": 100}),
            tool("computer_write_file", path=f"{tmp_path.name}.txt", data="aGkK"),  # a step with no frame
            tool("computer_move_mouse", coordinates={"x": 300, "y": 200}),
            tool("computer_move_mouse", coordinates={"x": 500, "y": 300}),
            tool("set_task_status", status="completed", description="moved"),
        ]
    )
    task = agent.wait(agent.create("Move the pointer, with a video")["id"])
    r = agent.client.get(f"/tasks/{task['id']}/trajectory", params={"video": "true"})
    assert r.status_code == 200, r.text
    with zipfile.ZipFile(io.BytesIO(r.content)) as z:
        steps = [orjson.loads(line) for line in z.read("trajectory.jsonl").splitlines()][1:]
        (tmp_path / "run.mp4").write_bytes(z.read("trajectory.mp4"))
    framed = [s for s in steps if s["frameAfter"]]
    assert len(steps) == 4 and len(framed) == 3
    fields = "stream=codec_name,width,height,nb_read_frames"
    command = ["ffprobe", "-v", "error", "-count_frames", "-select_streams", "v:0", "-of", "json"]
    probe = subprocess.run(
        [*command, "-show_entries", fields, str(tmp_path / "run.mp4")], capture_output=True, check=True
    )
    stream = orjson.loads(probe.stdout)["streams"][0]
    assert stream == {"codec_name": "h264", "width": 1280, "height": 720, "nb_read_frames": "3"}
    # without ?video the archive has no video; a bad value is a 400; no ffmpeg is a clear 501
    plain = agent.client.get(f"/tasks/{task['id']}/trajectory")
    assert "trajectory.mp4" not in zipfile.ZipFile(io.BytesIO(plain.content)).namelist()
    bad = agent.client.get(f"/tasks/{task['id']}/trajectory", params={"video": "maybe"})
    assert bad.status_code == 400 and bad.json()["message"].startswith("video"), bad.text
    agent.settings.tasks.trajectory_ffmpeg = "no-such-ffmpeg"
    missing = agent.client.get(f"/tasks/{task['id']}/trajectory", params={"video": "1"})
    assert missing.status_code == 501, missing.text
    assert missing.json() == {
        "statusCode": 501,
        "message": missing.json()["message"],
        "error": "Not Implemented",
    }
    assert "ffmpeg" in missing.json()["message"] and "TASKS_TRAJECTORY_FFMPEG" in missing.json()["message"]
