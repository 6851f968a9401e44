"""``deskpilot``: the command line of the package's tools.

    deskpilot eval SUITE [--model M] [--url URL [--agent-url URL] [--token T] | --image TAG] [--out DIR]
                   [--save-trajectories DIR | --replay DIR]
    deskpilot replay TRAJECTORY --url URL [--token T] [--tolerance 0.02] [--out DIR]

``eval`` scores a model on a suite of task files (docs/evaluation.md): against the appliance at ``--url``,
or a private sandbox (native, or from ``--image``) started for the run and stopped after it. It exits 0
when every task passed, 1 when some failed, 2 on bad usage or an unreadable suite. ``--save-trajectories``
downloads each task's trajectory as ``DIR/<task id>.zip``; ``--replay DIR`` replays those instead of running a
model, and the same checks score the suite.

``replay`` sends a task's recorded actions (``GET /tasks/{id}/trajectory``) to the desktop service at
``--url`` and compares each settled frame with the recorded one (``deskpilot.client.replay``). It exits 0 when
every step matched, 1 at the first that did not (its recorded, replayed and diff frames written to ``--out``),
2 on bad usage or an unreadable archive.
"""

from __future__ import annotations

import argparse
import os
import sys
import zipfile
from collections.abc import Sequence
from pathlib import Path

import httpx

from deskpilot.client.replay import replay
from deskpilot.client.sandboxes import ApplianceError, sandbox
from deskpilot.computer.client import Desktop
from deskpilot.errors import ClientError
from deskpilot.evaluation.report import write_reports
from deskpilot.evaluation.runner import run_suite
from deskpilot.evaluation.suite import SuiteError, load_suite


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="deskpilot", description="Deskpilot's tools")
    commands = parser.add_subparsers(dest="command", required=True)
    ev = commands.add_parser("eval", help="score a model on a suite of desktop tasks")
    ev.add_argument("suite", type=Path, help="a task file (YAML) or a folder of them")
    ev.add_argument("--model", help="a model name of GET /tasks/models (default: the service's)")
    ev.add_argument("--url", help="the desktop service of a running appliance (default: a private sandbox)")
    ev.add_argument("--agent-url", help="its task service (default: the next port)")
    ev.add_argument("--token", help="its token (default: $DESKPILOT_TOKEN)")
    ev.add_argument("--image", help="run a private sandbox from this image instead of natively")
    ev.add_argument("--out", type=Path, default=Path("eval-report"), help="where the reports go")
    mode = ev.add_mutually_exclusive_group()
    mode.add_argument("--save-trajectories", type=Path, metavar="DIR", help="save each task's as DIR/ID.zip")
    mode.add_argument("--replay", type=Path, metavar="DIR", help="replay DIR/ID.zip instead of a model")
    rp = commands.add_parser("replay", help="replay a task's trajectory on a desktop, checking every frame")
    rp.add_argument("trajectory", type=Path, help="a zip of GET /tasks/{id}/trajectory")
    rp.add_argument("--url", required=True, help="the desktop service to replay on")
    rp.add_argument("--token", help="its token (default: $DESKPILOT_TOKEN)")
    rp.add_argument("--tolerance", type=float, default=0.02, help="share of pixels that may differ (0.02)")
    rp.add_argument("--out", type=Path, help="where a divergence's frames go (default: replay-step-N)")
    args = parser.parse_args(argv)
    return replay_command(args) if args.command == "replay" else eval_command(args)


def replay_command(args: argparse.Namespace) -> int:
    token = args.token or os.environ.get("DESKPILOT_TOKEN")
    try:
        with Desktop(args.url, token) as desktop:
            result = replay(args.trajectory, desktop, args.tolerance, args.out)
    except (OSError, zipfile.BadZipFile, KeyError, ValueError) as exc:
        print(f"deskpilot replay: {args.trajectory}: {exc}", file=sys.stderr)
        return 2
    except ClientError as exc:
        print(f"deskpilot replay: {exc}", file=sys.stderr)
        return 2
    done = f"{result.replayed} of {result.steps} steps replayed ({result.skipped} skipped)"
    done += f" in {result.seconds:.1f} s"
    if result.divergence is None:
        print(f"{done}: every frame matched")
        return 0
    d = result.divergence
    print(f"{done}: step {d.step} diverged ({d.changed:.1%} of the pixels differ): {d.action}")
    for path in d.files:
        print(path)
    return 1


def eval_command(args: argparse.Namespace) -> int:
    try:
        tasks = load_suite(args.suite)
    except SuiteError as exc:
        print(f"deskpilot eval: {exc}", file=sys.stderr)
        return 2
    try:
        with sandbox(url=args.url, agent_url=args.agent_url, token=args.token, image=args.image) as box:
            out, save = (args.out / "replay" if args.replay else None), args.save_trajectories
            result = run_suite(args.suite.name, tasks, box, args.model, args.replay, out, save)
    except (ApplianceError, httpx.HTTPError, OSError) as exc:
        print(f"deskpilot eval: {exc}", file=sys.stderr)
        return 2
    for path in write_reports(result, args.out):
        print(path)
    print(f"{result.passed}/{len(result.results)} passed ({result.score:.0%})")
    return 0 if result.passed == len(result.results) else 1


if __name__ == "__main__":
    sys.exit(main())
