"""The accessibility tree of the focused window: ours (deskpilot/desktop/accessibility.py, dbus-fast, every
call of a level in one burst) against a plain pyatspi walk of the same window (OSWorld's way: one call per
property), in Geany, xfce4-terminal and Firefox on a local page of 200 elements; and what reading trees costs
the desktop service's memory. On a private Xvfb with the session's AT-SPI bus (testbed/atspi.py).

    .venv/bin/python bench/accessibility.py [--rounds 20]

Needs python3-pyatspi (scripts/install-system.sh --test) for the baseline, run by Debian's python3.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from deskpilot.desktop.accessibility import read_tree  # noqa: E402
from deskpilot.desktop.atspi import Atspi, Query  # noqa: E402
from testbed.atspi import accessibility_bus  # noqa: E402
from testbed.timing import wait_until  # noqa: E402
from testbed.xvfb import Display, managed_display  # noqa: E402

# pyatspi's walk of the active frame, depth 30 and 5000 nodes as OSWorld caps
# it: role, name, states, extents and text, one call each; prints the milliseconds and the node count
BASELINE = r"""
import sys, time, pyatspi
def walk(node, depth, count):
    if depth > 30 or count[0] >= 5000:
        return
    count[0] += 1
    node.getRoleName(); node.name; node.getState().getStates()
    try:
        node.queryComponent().getExtents(pyatspi.DESKTOP_COORDS)
    except NotImplementedError:
        pass
    try:
        text = node.queryText(); text.getText(0, min(text.characterCount, 2000))
    except NotImplementedError:
        pass
    for child in node:
        if child is not None:
            walk(child, depth + 1, count)
desktop = pyatspi.Registry.getDesktop(0)
frames = [w for a in desktop if a is not None for w in a if w is not None]
frame = next(w for w in frames if w.getState().contains(pyatspi.STATE_ACTIVE))  # the focused window, as ours
times = []
for _ in range(int(sys.argv[1])):
    started, count = time.perf_counter(), [0]
    walk(frame, 1, count)
    times.append((time.perf_counter() - started) * 1000)
print(sorted(times)[len(times) // 2], count[0])
"""

PAGE = "<!doctype html><title>Bench page</title><h1>Two hundred elements</h1>" + "".join(
    f"<p>Paragraph {i} <a href='#{i}'>link {i}</a> <button>button {i}</button></p>" for i in range(66)
)


def ours(rounds: int, pid: int) -> tuple[float, int]:
    async def run() -> tuple[float, int]:
        atspi, times, tree = Atspi(), [], {}
        query = Query(pid=pid)
        await read_tree(atspi, query)
        for _ in range(rounds):
            started = time.perf_counter()
            tree = await read_tree(atspi, query)
            times.append((time.perf_counter() - started) * 1000)
        atspi.close()
        return statistics.median(times), int(tree["nodes"])

    return asyncio.run(run())


def baseline(rounds: int) -> tuple[float, int]:
    done = subprocess.run(
        ["/usr/bin/python3", "-c", BASELINE, str(rounds)], capture_output=True, text=True, timeout=600
    )
    if done.returncode:
        raise RuntimeError(done.stderr[-2000:])
    ms, nodes = done.stdout.split()
    return float(ms), int(nodes)


def focused(display: Display) -> bool:
    """A tree of the focused window answers (the application has registered and shows its window)."""
    tree = asyncio.run(read_tree(Atspi(), Query(max_depth=2)))
    return tree["root"] is not None


def memory(rounds: int) -> tuple[float, float, float]:
    """The desktop service's resident memory (MiB) idle after start, what the feature's imports (dbus-fast and
    the AT-SPI client, imported first here) add to it, and its growth after reading ``rounds`` trees."""
    script = f"""
import asyncio, gc, json, sys
sys.path.insert(0, {str(ROOT)!r})
def rss():
    return int(open("/proc/self/statm").read().split()[1]) * 4096 / 2**20
bare = rss()
import deskpilot.desktop.accessibility  # dbus-fast with it
imported = rss() - bare
from deskpilot.desktop.api import create_app
from deskpilot.desktop.accessibility import read_tree
from deskpilot.desktop.atspi import Atspi, Query
create_app()
gc.collect()
before = rss()
async def trees():
    atspi = Atspi()
    for _ in range({rounds}):
        await read_tree(atspi, Query())
asyncio.run(trees()); gc.collect()
print(json.dumps([before, imported, rss() - before]))
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=600)
    if done.returncode:
        raise RuntimeError(done.stderr[-2000:])
    idle, imported, growth = json.loads(done.stdout)
    return idle, imported, growth


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=20)
    args = parser.parse_args()
    scratch = Path(tempfile.mkdtemp(prefix="deskpilot-bench-a11y-"))
    (scratch / "page.html").write_text(PAGE)
    apps = {
        "geany": ["geany", "--new-instance", "--no-session", f"--config={scratch / 'geany'}"],
        "xfce4-terminal": ["xfce4-terminal", "--disable-server"],
        "firefox": [
            "firefox-esr",
            "--new-instance",
            "--profile",
            str(scratch / "firefox"),
            f"file://{scratch}/page.html",
        ],
    }
    (scratch / "firefox").mkdir()
    with managed_display() as display, accessibility_bus(display):
        os.environ["DISPLAY"] = display.name
        env = {"GNOME_ACCESSIBILITY": "1", "HOME": str(scratch)}
        print(f"{'application':16} {'nodes':>6} {'ours p50':>9} {'pyatspi p50':>12} {'speed-up':>9}")
        for name, argv in apps.items():
            proc = display.spawn(argv, env=env)
            wait_until(lambda: focused(display), 60, what=f"{name}'s tree")
            time.sleep(2)  # the page or the window finishes loading
            ms, nodes = ours(args.rounds, proc.pid)
            base_ms, base_nodes = baseline(args.rounds)
            print(
                f"{name:16} {nodes:>6} {ms:>7.1f}ms {base_ms:>10.1f}ms {base_ms / ms:>8.1f}x  ({base_nodes})"
            )
            if name == "xfce4-terminal":
                idle, imported, growth = memory(args.rounds)
                print(
                    f"desktop service: {idle:.1f} MiB idle, of which {imported:.1f} MiB the AT-SPI client's "
                    f"imports (dbus-fast); +{growth:.1f} MiB after {args.rounds} trees"
                )
            proc.terminate()
            proc.wait(10)


if __name__ == "__main__":
    main()
