"""The appliance image: build times, size per layer, start to Docker's `healthy`, idle memory, stop time.

Figures:
  base      seconds scripts/base-image.sh takes to make debian:bookworm-slim here (debootstrap, trimmed,
            imported), under a tag of its own so the real one stays cached
  cold      `make image` with no build cache (--no-cache: every package downloaded and installed again)
  warm      `make image` again with nothing changed, and after a change to the code (deskpilot/)
  size      the image and each of its layers (docker history); target <= 1.4 GB
  healthy   seconds from `docker run` until Docker reports `healthy`; median of N runs; target <= 8 s
  idle      memory after 30 s idle, no application open (what `docker stats` shows); target <= 400 MiB
  firefox   the same with Firefox open on its start page
  stop      seconds `docker stop` takes (every program stops on SIGTERM; 10 s would mean a SIGKILL)
The containers run as tests/image runs them: README volumes, --shm-size 1g, the host's network on free ports.

  .venv/bin/python bench/image.py [--runs N] [--no-cold]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from testbed import ROOT
from testbed.container import Container, build, docker, start_engine

TAG = "deskpilot-bench:latest"
GB = 1e9  # `docker images` counts sizes in powers of ten


def base_seconds() -> float:
    tag = "deskpilot-bench-base:bookworm-slim"
    docker("rmi", tag, check=False)
    started = time.monotonic()
    subprocess.run([str(ROOT / "scripts" / "base-image.sh"), tag], check=True)
    seconds = time.monotonic() - started
    docker("rmi", tag)
    return seconds


def code_change_seconds() -> float:
    """A rebuild after an edit under deskpilot/: the checkout's files, copied, with one comment added."""
    with tempfile.TemporaryDirectory(prefix="deskpilot-bench-") as tmp:
        files = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
        for name in filter(None, files.decode().split("\0")):
            if (ROOT / name).is_file():
                (Path(tmp) / name).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(ROOT / name, Path(tmp) / name)
        with (Path(tmp) / "deskpilot" / "__init__.py").open("a") as f:
            f.write(f"# {time.time()}\n")
        started = time.monotonic()
        subprocess.run([f"{tmp}/scripts/build-image.sh", TAG], check=True, capture_output=True)
        return time.monotonic() - started


def layers() -> list[tuple[int, str]]:
    """(bytes, the instruction that made it) of every non-empty layer, the base last."""
    out = docker("history", "--no-trunc", "--human=false", "--format", "{{.Size}}\t{{.CreatedBy}}", TAG)
    rows = [line.split("\t", 1) for line in out.splitlines()]
    return [(int(n), " ".join(made.replace("/bin/sh -c ", "").split())) for n, made in rows if int(n)]


def boot() -> tuple[float, float, float, float]:
    """One container: seconds to healthy, idle MiB, MiB with Firefox open, seconds to stop."""
    c = Container(TAG).run()
    try:
        healthy = c.wait_health("healthy", timeout=120)
        time.sleep(30)
        idle = c.memory_mib()
        r = httpx.post(
            f"{c.desktop_url}/computer-use",
            json={"action": "application", "application": "browser"},
            headers=c.headers,
            timeout=120,
        )
        assert r.status_code == 200, r.text
        time.sleep(15)
        firefox = c.memory_mib()
        stop = c.stop()
        return healthy, idle, firefox, stop
    finally:
        c.remove()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--no-cold", action="store_true", help="skip the cold build and the base image")
    args = parser.parse_args()
    start_engine()

    if not args.no_cold:
        base = base_seconds()
        cold = build(TAG, "--no-cache")
    warm = build(TAG)
    size = float(docker("image", "inspect", "-f", "{{.Size}}", TAG))
    per_layer = layers()
    runs = [boot() for _ in range(args.runs)]
    built = docker("image", "inspect", "-f", "{{.Id}}", TAG).strip()
    changed = code_change_seconds()  # re-tags TAG
    docker("rmi", TAG, built)

    if not args.no_cold:
        print(f"base image made here (debootstrap, trimmed, imported): {base:.1f} s")
        print(f"cold build (make image, no cache): {cold:.1f} s")
    print(f"warm build, nothing changed: {warm:.1f} s; after a change under deskpilot/: {changed:.1f} s")
    print(f"image size: {size / GB:.2f} GB; target <= 1.4 GB")
    for n, created_by in per_layer:
        print(f"  {n / 1e6:8.1f} MB  {created_by[:90]}")
    healthy, idle, firefox, stop = (statistics.median(r[i] for r in runs) for i in range(4))
    each = [", ".join(f"{r[i]:.1f}" for r in runs) for i in range(4)]
    print(f"docker run to healthy: {healthy:.1f} s median of {args.runs} ({each[0]}); target <= 8 s")
    print(f"idle memory after 30 s: {idle:.0f} MiB median ({each[1]}); target <= 400 MiB")
    print(f"memory with Firefox open: {firefox:.0f} MiB median ({each[2]})")
    print(f"docker stop: {stop:.1f} s median ({each[3]})")


if __name__ == "__main__":
    main()
