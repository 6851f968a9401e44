"""Trajectories: what recording costs, what it weighs, how fast it replays.

Recording costs the hot path nothing: the agent already keeps every action and the settled frame it got
back in the task's conversation, and ``GET /tasks/{id}/trajectory`` builds the archive from it when asked.
So this measures (on its own Xvfb and desktop service, testbed/bench_desktop.py):

  recording: 100 steps acted on the desktop (moves, each with the settled 1280-wide frame in its answer, as
  the agent asks) and written as a trajectory, against the same steps with no frame asked (the baseline)
  disk per 100 steps of that archive (frames stored once each)
  replay speed of the archive on the same desktop, in steps per second

    .venv/bin/python bench/trajectory.py [--steps 100]
"""

from __future__ import annotations

import argparse
import base64
import statistics
import sys
import tempfile
import time
import zipfile
from pathlib import Path

import httpx
import orjson

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from deskpilot.client.replay import replay
from deskpilot.computer.client import Desktop
from deskpilot.tasks.trajectory import TrajectoryWriter
from testbed.bench_desktop import Changer, bench_desktop

OBSERVE = {"settle": {"quietMs": 20, "maxMs": 1000}, "screenshot": {"width": 1280}}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=100)
    args = ap.parse_args()
    with bench_desktop() as desk, httpx.Client(base_url=desk.url, timeout=30) as http:
        changer = Changer(desk.display.name)
        writer = TrajectoryWriter()
        plain: list[float] = []
        recorded: list[float] = []
        before = None
        for i in range(args.steps):
            action = {
                "action": "move_mouse",
                "coordinates": {"x": 100 + i * 7 % 1000, "y": 100 + i * 3 % 500},
            }
            changer.change()
            started = time.perf_counter()
            http.post("/computer-use", json=action).raise_for_status()
            plain.append((time.perf_counter() - started) * 1000)
            changer.change()
            started = time.perf_counter()
            body = http.post("/computer-use", json={**action, **OBSERVE}).json()
            after = writer.frame(base64.b64decode(body["data"]["image"]))
            step = {
                "step": i + 1,
                "actor": "agent",
                "action": action,
                "frameBefore": before,
                "frameAfter": after,
            }
            writer.lines.append(orjson.dumps(step))
            recorded.append((time.perf_counter() - started) * 1000)
            before = after
        archive = Path(tempfile.mkdtemp(prefix="deskpilot-trajectory-")) / "trajectory.zip"
        archive.write_bytes(writer.close({"format": "deskpilot-trajectory/1", "steps": args.steps}))
        with Desktop(desk.url) as desktop:
            result = replay(archive, desktop, tolerance=0.02)
    p50_plain, p50_rec = statistics.median(plain), statistics.median(recorded)
    per_100 = archive.stat().st_size / args.steps * 100 / 1e6
    verdict = "every frame matched" if result.divergence is None else f"diverged: {result.divergence}"
    print(f"trajectory bench: {args.steps} steps on Xvfb {desk.display.name}")
    print(f"  an action alone                                  p50 {p50_plain:7.2f} ms")
    print(f"  the same, settled, its 1280-wide frame kept      p50 {p50_rec:7.2f} ms (the agent's step)")
    print("  recording adds nothing to it: the archive is built on request from the task's conversation")
    with zipfile.ZipFile(archive) as z:
        frames = [i.file_size for i in z.infolist() if i.filename.startswith("frames/")]
    frame_kb = statistics.mean(frames) / 1e3
    print(f"  disk per 100 steps: {per_100:.2f} MB here ({len(frames)} distinct frames: a still screen);")
    print(f"  a frame is {frame_kb:.0f} KB, so a run that changes the screen at every step keeps")
    print(f"  ~{frame_kb * 100 / 1e3:.0f} MB per 100 steps")
    rate = result.replayed / result.seconds
    print(f"  replay: {rate:.1f} steps/s ({result.replayed} steps in {result.seconds:.1f} s), {verdict}")


if __name__ == "__main__":
    main()
