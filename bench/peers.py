"""Deskpilot against three peers, on one display in one run, each action interleaved round by round.

Deskpilot twice: over its action channel (GET /computer-use/ws, one WebSocket kept open, screenshots as
binary frames: the first column, against which the ratios are given) and over POST /computer-use (a
kept-alive HTTP connection, a request per action). The peers:

- Anthropic's computer-use reference demo (anthropics/anthropic-quickstarts,
  computer-use-demo/computer_use_demo/tools/computer.py) drives the desktop with a shell command per action:
  `scrot -p FILE` for a screenshot (then `convert FILE -resize WxH! FILE` to scale it), read back and
  base64-encoded; `xdotool mousemove --sync X Y`; `xdotool click 1`; and `xdotool type --delay 12 -- CHUNK`
  per 50 characters. Those commands run here as the demo runs them (a shell per call).
- cua's computer server (PyPI cua-computer-server, Python >= 3.12), over its WebSocket `/ws`, the transport
  its own client uses: `screenshot`, `left_click` {x, y}, `move_cursor` {x, y}, `type_text` {text}.
  `bench/peers/setup-cua.sh` installs it into a venv under ~/.cache/deskpilot-peers/cua.
- Bytebot's desktop daemon (bytebotd, bytebot-ai/bytebot packages/bytebotd, NestJS on nut.js), built from
  its source by `bench/peers/setup-bytebot.sh` under ~/.cache/deskpilot-peers/bytebot (its native input
  module built with cmake-js against this Node's headers), over its `POST /computer-use`: `screenshot`,
  `click_mouse`, `move_mouse`, `type_text` (no `delay`: its own default). It listens on a free port here
  (the setup makes its fixed 9990 a BYTEBOTD_PORT variable).

A peer that is not set up, or does not start, is skipped and the run says why; the others are measured.
How each was made to run here (a Python 3.12 from pyenv, FastAPI pinned below 0.141 for cua 0.3.46, cua
started without CONTAINER_NAME, bytebotd's native modules built against /usr/include/node, its port made a
variable) and what did not work (the npm portable Python downloads its interpreter from GitHub): the setup
scripts' headers and docs/benchmarks.md, "Against its peers".
Neither cua's server nor bytebotd can scale a screenshot (cua's `--width` is parsed and unused in 0.3.46;
Bytebot's `screenshot` takes no size), so the scaled row has the demo alone beside Deskpilot.

    bench/peers/setup-cua.sh && bench/peers/setup-bytebot.sh   # once; see each script's header
    .venv/bin/python bench/peers.py [--n 30] [--only demo,cua,bytebot]
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import httpx
from websockets.sync.client import connect as ws_connect

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.action_channel import Channel
from testbed.bench_desktop import BenchDesktop, Changer, bench_desktop
from testbed.net import free_port, wait_http

CONVERT = "/usr/bin/convert" if os.path.exists("/usr/bin/convert") else "convert"
TEXT = "abcdefghij" * 10
CACHE = Path(os.environ.get("DESKPILOT_PEERS_CACHE", Path.home() / ".cache" / "deskpilot-peers"))
# Bytebot types 5 characters a second (nut.js waits 100 ms after each key press and release): 20 s for the
# 100 characters, so it types in fewer rounds than the others
BYTEBOT_TYPE_ROUNDS = 3


@dataclass
class Peer:
    name: str
    screenshot: Callable[[], object]  # one screenshot as its client gets it, timed
    png: Callable[[], bytes]  # the PNG of one, for its size
    click: Callable[[int, int], object]
    move: Callable[[int, int], object]
    type: Callable[[str], object]
    scaled: Callable[[int], object] | None = None
    type_rounds: int | None = None
    close: Callable[[], object] = lambda: None


class Skipped(Exception):
    pass


def peer_port() -> int:
    while (port := free_port()) in (9990, 9991, 9992):  # Bytebot's own ports, perhaps in use elsewhere
        pass
    return port


def start(desk: BenchDesktop, argv: list[str], env: dict[str, str], log: Path, **kw) -> subprocess.Popen:
    """Start a peer's server on the bench display; the display stops it with the rest."""
    with log.open("wb") as out:
        proc = subprocess.Popen(
            argv, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True, **kw
        )
    desk.display.children.append(proc)
    return proc


def wait_up(proc: subprocess.Popen, url: str, log: Path, ok: tuple[int, ...] = (200,)) -> None:
    try:
        wait_http(url, timeout=60, ok=ok)
    except Exception as e:
        tail = log.read_text(errors="replace")[-600:] if log.exists() else ""
        state = f"exited {proc.returncode}" if proc.poll() is not None else "still running"
        raise Skipped(f"did not answer {url} ({state}: {e}); its log ends: {tail}") from e


def demo_peer(desk: BenchDesktop, tmp: Path) -> Peer:
    for tool in ("scrot", "xdotool", CONVERT):
        if not shutil.which(tool):
            raise Skipped(f"{tool} is missing: make bench installs it (scripts/install-system.sh --test)")
    shot = tmp / "screenshot.png"
    env = {**desk.display.env}

    def sh(command: str) -> None:
        subprocess.run(command, shell=True, env=env, check=True, capture_output=True)

    def screenshot(width: int | None = None) -> int:
        sh(f"scrot -o -p {shot}")
        if width:
            sh(f"{CONVERT} {shot} -resize {width}x{round(width * 1080 / 1920)}! {shot}")
        return len(base64.b64encode(shot.read_bytes()))

    def png() -> bytes:
        sh(f"scrot -o -p {shot}")
        return shot.read_bytes()

    def type_(text: str) -> None:
        for i in range(0, len(text), 50):
            sh(f"xdotool type --delay 12 -- {text[i : i + 50]}")

    return Peer(
        "reference demo",
        screenshot=screenshot,
        png=png,
        scaled=screenshot,
        click=lambda x, y: sh("xdotool click 1"),
        # `--sync` waits for a motion, which a move to where the pointer is never makes
        move=lambda x, y: sh(f"xdotool mousemove --sync {x} {y}"),
        type=type_,
    )


def cua_peer(desk: BenchDesktop, tmp: Path) -> Peer:
    if not (CACHE / "cua" / "READY").exists():
        raise Skipped(f"not set up in {CACHE / 'cua'}: run bench/peers/setup-cua.sh")
    port = peer_port()
    log = tmp / "cua.log"
    # CONTAINER_NAME (set on some machines) makes the server ask every client for cloud credentials
    env = {k: v for k, v in desk.display.env.items() if k != "CONTAINER_NAME"}
    env.update(CUA_TELEMETRY="0")
    argv = [str(CACHE / "cua" / "bin" / "python"), "-m", "computer_server", "--port", str(port)]
    proc = start(desk, [*argv, "--log-level", "warning"], env, log)
    wait_up(proc, f"http://127.0.0.1:{port}/status", log)
    # without per-message deflate, as Deskpilot's client: zlib over a PNG costs milliseconds on either side
    ws = ws_connect(f"ws://127.0.0.1:{port}/ws", max_size=None, open_timeout=30, compression=None)

    def call(command: str, **params: object) -> str:
        ws.send(json.dumps({"command": command, "params": params}))
        reply = str(ws.recv(timeout=60))
        assert reply.startswith('{"success":true'), reply[:300]
        return reply

    return Peer(
        "cua computer-server",
        screenshot=lambda: call("screenshot"),
        png=lambda: base64.b64decode(json.loads(call("screenshot"))["image_data"]),
        click=lambda x, y: call("left_click", x=x, y=y),
        move=lambda x, y: call("move_cursor", x=x, y=y),
        type=lambda text: call("type_text", text=text),
        close=ws.close,
    )


def bytebot_peer(desk: BenchDesktop, tmp: Path) -> Peer:
    daemon = CACHE / "bytebot" / "src" / "packages" / "bytebotd"
    if not (CACHE / "bytebot" / "READY").exists():
        raise Skipped(f"not built in {CACHE / 'bytebot'}: run bench/peers/setup-bytebot.sh")
    if not shutil.which("node"):
        raise Skipped("node is missing")
    port = peer_port()
    log = tmp / "bytebotd.log"
    env = {**desk.display.env, "BYTEBOTD_PORT": str(port)}
    proc = start(desk, ["node", "dist/main.js"], env, log, cwd=daemon)
    url = f"http://127.0.0.1:{port}"
    wait_up(proc, f"{url}/computer-use", log, ok=(200, 404, 405))
    http = httpx.Client(base_url=url, timeout=120)

    def post(body: dict) -> httpx.Response:
        r = http.post("/computer-use", json=body)
        assert r.status_code in (200, 201), r.text[:300]
        return r

    def click(x: int, y: int) -> object:
        return post(
            {"action": "click_mouse", "coordinates": {"x": x, "y": y}, "button": "left", "clickCount": 1}
        )

    return Peer(
        "Bytebot bytebotd",
        screenshot=lambda: post({"action": "screenshot"}),
        png=lambda: base64.b64decode(post({"action": "screenshot"}).json()["image"]),
        click=click,
        move=lambda x, y: post({"action": "move_mouse", "coordinates": {"x": x, "y": y}}),
        type=lambda text: post({"action": "type_text", "text": text}),
        type_rounds=BYTEBOT_TYPE_ROUNDS,
        close=http.close,
    )


PEERS = {"demo": demo_peer, "cua": cua_peer, "bytebot": bytebot_peer}


def http_peer(http: httpx.Client) -> Peer:
    """Deskpilot's POST /computer-use: a request per action (a kept-alive connection), the answer parsed."""

    def post(body: dict) -> dict:
        r = http.post("/computer-use", json=body)
        assert r.status_code == 200, r.text
        return r.json()

    def point(action: str, x: int, y: int, **more: object) -> dict:
        return post({"action": action, "coordinates": {"x": x, "y": y}, **more})

    return Peer(
        "Deskpilot HTTP",
        screenshot=lambda: post({"action": "screenshot"}),
        png=lambda: base64.b64decode(post({"action": "screenshot"})["data"]["image"]),
        scaled=lambda width: post({"action": "screenshot", "width": width}),
        click=lambda x, y: point("click_mouse", x, y, button="left", clickCount=1),
        move=lambda x, y: point("move_mouse", x, y),
        type=lambda text: post({"action": "type_text", "text": text}),
    )


def interleaved(
    fns: list[Callable[[], object] | None], n: int, between: Callable[[], None], rounds: list[int | None]
) -> list[list[float]]:
    """ms of each, one call of each in turn a round (after two warm-up rounds; one where a peer's rounds
    are capped)."""
    out: list[list[float]] = [[] for _ in fns]
    for i in range(n + 2):
        for f, times, cap in zip(fns, out, rounds, strict=True):
            if f is None or (cap is not None and i > cap):
                continue
            between()
            started = time.perf_counter()
            f()
            if i >= (1 if cap is not None else 2):
                times.append((time.perf_counter() - started) * 1000)
    return out


def cell(times: list[float], ours: list[float]) -> str:
    if not times:
        return "n/a"
    p50, p95 = statistics.median(times), sorted(times)[int(len(times) * 0.95)]
    digits = 2 if p50 < 10 else 1  # a click over the channel is well under a millisecond
    figures = f"{p50:.{digits}f} ({p95:.{digits}f})"
    return figures if times is ours else f"{figures} {p50 / statistics.median(ours):.1f}x"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=30)
    ap.add_argument("--only", default=",".join(PEERS), help="peers to measure, of: " + ",".join(PEERS))
    args = ap.parse_args()
    if unknown := set(args.only.split(",")) - set(PEERS):
        ap.error(f"unknown peers: {', '.join(sorted(unknown))}")
    tmp = Path(tempfile.mkdtemp(prefix="deskpilot-peers-"))
    peers: list[Peer] = []
    skipped: list[tuple[str, str]] = []
    started = time.monotonic()
    with bench_desktop() as desk, httpx.Client(base_url=desk.url, timeout=30) as http:
        # Deskpilot's first column is its action channel; its HTTP API is the next, measured as a peer
        ours = Channel(desk.url)
        peers.append(http_peer(http))
        for key in args.only.split(","):
            try:
                peers.append(PEERS[key](desk, tmp))
            except Skipped as e:
                skipped.append((key, str(e)))

        def post(body: dict) -> dict:
            return ours(body)

        def row(name: str, ours: Callable[[], object], theirs: list, n: int, between: Callable[[], None]):
            caps = [
                None,
                *([p.type_rounds for p in peers] if name.startswith("type") else [None] * len(peers)),
            ]
            rows.append((name, interleaved([ours, *theirs], n, between, caps)))
            print(f"  measured {name} ({time.monotonic() - started:.0f} s)", file=sys.stderr)

        changer = Changer(desk.display.name)
        nothing = lambda: None  # noqa: E731
        rows: list[tuple[str, list[list[float]]]] = []
        row(
            "full screenshot",
            lambda: post({"action": "screenshot"}),
            [p.screenshot for p in peers],
            args.n,
            changer.change,
        )
        row(
            "screenshot scaled to 1366 wide",
            lambda: post({"action": "screenshot", "width": 1366}),
            [(lambda s=p.scaled: s(1366)) if p.scaled else None for p in peers],
            args.n,
            changer.change,
        )
        click = {
            "action": "click_mouse",
            "coordinates": {"x": 1500, "y": 900},
            "button": "left",
            "clickCount": 1,
        }
        row("click", lambda: post(click), [lambda c=p.click: c(1500, 900) for p in peers], args.n, nothing)
        # each to its own point, so each call is a real motion
        move = {"action": "move_mouse", "coordinates": {"x": 1400, "y": 800}}
        row(
            "move",
            lambda: post(move),
            [lambda m=p.move, i=i: m(1402 + 2 * i, 802 + 2 * i) for i, p in enumerate(peers)],
            args.n,
            nothing,
        )
        post(
            {"action": "click_mouse", "coordinates": {"x": 300, "y": 300}, "button": "left", "clickCount": 1}
        )
        row(
            "type 100 characters",
            lambda: post({"action": "type_text", "text": TEXT}),
            [lambda t=p.type: t(TEXT) for p in peers],
            max(5, args.n // 3),
            nothing,
        )
        ours_png = len(post({"action": "screenshot"})["image"])
        pngs = [len(p.png()) for p in peers]
        for p in peers:
            p.close()
        ours.close()
    shutil.rmtree(tmp, ignore_errors=True)
    load = os.getloadavg()
    print(
        f"Deskpilot against its peers, same display, interleaved; n={args.n}; {os.cpu_count()} CPUs, "
        f"load {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} (1, 5, 15 min)"
    )
    names = ["Deskpilot channel", *(p.name for p in peers)]
    print(f"  {'p50 (p95) ms, ratio':32s}" + "".join(f"{n:>28s}" for n in names))
    for name, times in rows:
        print(f"  {name:32s}" + "".join(f"{cell(t, times[0]):>28s}" for t in times))
    sizes = [ours_png, *pngs]
    print(f"  {'PNG of the same screen':32s}" + "".join(f"{s / 1e6:>25.2f} MB" for s in sizes))
    for key, why in skipped:
        print(f"  skipped {key}: {why}")


if __name__ == "__main__":
    main()
