"""Deskpilot against the approach of Anthropic's computer-use reference demo, on one display in one run.

The demo (anthropics/anthropic-quickstarts, computer-use-demo/computer_use_demo/tools/computer.py) drives
the desktop with a shell command per action: `scrot -p FILE` for a screenshot (then
`convert FILE -resize WxH! FILE` to scale it), read back and base64-encoded; `xdotool mousemove --sync X Y`;
`xdotool click 1`; and `xdotool type --delay 12 -- CHUNK` per 50 characters. Those commands run here as the
demo runs them (a shell per call), interleaved round by round with the same action over Deskpilot's HTTP
API, so load hits both alike.

    .venv/bin/python bench/peers.py [--n 30]

Bytebot's daemon and cua's computer server are not measured here: cua's server needs Python 3.12 (Debian 12
has 3.11) and Bytebot's input library downloads prebuilt native modules from its own registry; neither can be
had on this machine (docs/benchmarks.md).
"""

from __future__ import annotations

import argparse
import base64
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.support.bench_desktop import Changer, bench_desktop

CONVERT = "/usr/bin/convert" if os.path.exists("/usr/bin/convert") else "convert"
TEXT = "abcdefghij" * 10


def interleaved(
    ours: Callable[[], object], theirs: Callable[[], object], n: int, between: Callable[[], None]
) -> tuple[list[float], list[float]]:
    """ms of each, one round of each at a time (after two warm-up rounds)."""
    a: list[float] = []
    b: list[float] = []
    for i in range(n + 2):
        for f, out in ((ours, a), (theirs, b)):
            between()
            started = time.perf_counter()
            f()
            if i >= 2:
                out.append((time.perf_counter() - started) * 1000)
    return a, b


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=30)
    args = ap.parse_args()
    for tool in ("scrot", "xdotool", CONVERT):
        if not shutil.which(tool):
            sys.exit(f"{tool} is missing: make bench installs it (scripts/install-system.sh --test)")
    tmp = Path(tempfile.mkdtemp(prefix="deskpilot-peers-"))
    shot = tmp / "screenshot.png"
    with bench_desktop() as desk, httpx.Client(base_url=desk.url, timeout=30) as http:
        env = {**desk.display.env}

        def sh(command: str) -> None:
            subprocess.run(command, shell=True, env=env, check=True, capture_output=True)

        def post(body: dict) -> httpx.Response:
            r = http.post("/computer-use", json=body)
            assert r.status_code == 200, r.text
            return r

        def demo_screenshot(width: int | None = None) -> int:
            sh(f"scrot -o -p {shot}")
            if width:
                sh(f"{CONVERT} {shot} -resize {width}x{round(width * 1080 / 1920)}! {shot}")
            return len(base64.b64encode(shot.read_bytes()))

        changer = Changer(desk.display.name)
        nothing = lambda: None  # noqa: E731
        rows: list[tuple[str, list[float], list[float]]] = []
        rows.append(
            (
                "full screenshot",
                *interleaved(lambda: post({"action": "screenshot"}), demo_screenshot, args.n, changer.change),
            )
        )
        rows.append(
            (
                "screenshot scaled to 1366 wide",
                *interleaved(
                    lambda: post({"action": "screenshot", "width": 1366}),
                    lambda: demo_screenshot(1366),
                    args.n,
                    changer.change,
                ),
            )
        )
        click = {
            "action": "click_mouse",
            "coordinates": {"x": 1500, "y": 900},
            "button": "left",
            "clickCount": 1,
        }
        rows.append(
            ("click", *interleaved(lambda: post(click), lambda: sh("xdotool click 1"), args.n, nothing))
        )
        # each to its own point: `--sync` waits for a motion, which a move to where the pointer is never makes
        move = {"action": "move_mouse", "coordinates": {"x": 1400, "y": 800}}
        rows.append(
            (
                "move",
                *interleaved(
                    lambda: post(move), lambda: sh("xdotool mousemove --sync 1402 802"), args.n, nothing
                ),
            )
        )
        post(
            {"action": "click_mouse", "coordinates": {"x": 300, "y": 300}, "button": "left", "clickCount": 1}
        )

        def demo_type() -> None:
            for i in range(0, len(TEXT), 50):
                sh(f"xdotool type --delay 12 -- {TEXT[i : i + 50]}")

        rows.append(
            (
                "type 100 characters",
                *interleaved(
                    lambda: post({"action": "type_text", "text": TEXT}),
                    demo_type,
                    max(5, args.n // 3),
                    nothing,
                ),
            )
        )
        ours_png = len(base64.b64decode(post({"action": "screenshot"}).json()["data"]["image"]))
        sh(f"scrot -o -p {shot}")
        theirs_png = shot.stat().st_size
    shutil.rmtree(tmp, ignore_errors=True)
    print(
        f"Deskpilot against the reference demo's commands, same display, interleaved; {os.cpu_count()} CPUs"
    )
    print(f"  {'p50 (p95), ms':34s} {'Deskpilot':>18s} {'reference demo':>18s}   ratio")
    for name, ours, theirs in rows:
        o, t = statistics.median(ours), statistics.median(theirs)
        op, tp = sorted(ours)[int(len(ours) * 0.95)], sorted(theirs)[int(len(theirs) * 0.95)]
        print(f"  {name:34s} {o:8.2f} ({op:7.2f}) {t:8.2f} ({tp:7.2f})   {t / o:6.1f}x")
    print(f"  {'PNG of the same screen':34s} {ours_png / 1e6:13.2f} MB {theirs_png / 1e6:13.2f} MB")


if __name__ == "__main__":
    main()
