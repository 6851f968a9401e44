"""``deskpilot``: the command line of the package's tools.

    deskpilot eval SUITE [--model M] [--url URL [--agent-url URL] [--token T] | --image TAG] [--jobs N]
                   [--out DIR] [--json] [--save-trajectories DIR | --replay DIR]
    deskpilot replay TRAJECTORY --url URL [--token T] [--timeout 5] [--mask X,Y,W,H ...] [--out DIR]
                     [--threshold 32] [--tolerance 0.02]
    deskpilot install [--with-deps]
    deskpilot up [--print-config]

``eval`` scores a model on a suite of task files (docs/evaluation.md): against the appliance at ``--url``,
or ``--jobs`` private sandboxes (native, or from ``--image``) started for the run, running tasks in parallel,
and stopped after it. It says each task as it finishes, writes its reports to ``--out`` with each task's
trajectory kept beside them (``trajectories/<task id>.zip``; ``--save-trajectories DIR`` copies them to DIR
too), and ``--json`` prints report.json on stdout (the task lines then go to stderr). It exits 0 when every
task passed, 1 when some failed, 2 when it could not run: bad usage, an unreadable suite, a ``--model`` the
appliance does not offer, an appliance that did not start or answer. ``--replay DIR`` replays saved
trajectories instead of running a model, and the same checks score the suite.

``replay`` sends a task's recorded actions (``GET /tasks/{id}/trajectory``) to the desktop service at
``--url`` and waits, up to ``--timeout`` s a step, for the screen to match each recorded frame, compared by
tiles with the clock and each ``--mask`` left out (``deskpilot.client.replay``, ``compare``). It exits 0 when
every frame compared matched, 1 at the first that did not (its recorded, replayed and diff frames written to
``--out``, by default a new temporary folder), 2 on bad usage, an unreadable archive or a failing desktop.

``install`` and ``up`` set up and start the native appliance from the installed package
(``deskpilot.client.install``). Every command runs in the base install; ``eval`` and ``replay`` need the
``client`` extra (Pillow, PyYAML) and say so without it.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import sys
import zipfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import httpx

from deskpilot import __version__
from deskpilot.client.compare import THRESHOLD, TOLERANCE, Box
from deskpilot.client.install import add_commands, install_command, up_command
from deskpilot.client.replay import TIMEOUT, ReplayResult, replay
from deskpilot.client.sandboxes import ApplianceError, Sandbox, sandbox
from deskpilot.computer.client import Desktop
from deskpilot.errors import ClientError


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="deskpilot", description="Deskpilot's tools")
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    commands = parser.add_subparsers(dest="command", required=True)
    ev = commands.add_parser("eval", help="score a model on a suite of desktop tasks")
    ev.add_argument("suite", type=Path, help="a task file (YAML) or a folder of them")
    ev.add_argument("--model", help="a model name of GET /tasks/models (default: the service's)")
    ev.add_argument("--url", help="the desktop service of a running appliance (default: a private sandbox)")
    ev.add_argument("--agent-url", help="its task service (default: the next port)")
    ev.add_argument("--token", help="its token (default: $DESKPILOT_TOKEN)")
    ev.add_argument("--image", help="run a private sandbox from this image instead of natively")
    ev.add_argument("--jobs", type=_jobs, default=1, help="tasks run at once, each on its own sandbox (1)")
    ev.add_argument("--out", type=Path, default=Path("eval-report"), help="where the reports go")
    ev.add_argument("--json", action="store_true", help="print report.json on stdout")
    mode = ev.add_mutually_exclusive_group()
    mode.add_argument("--save-trajectories", type=Path, metavar="DIR", help="save each task's as DIR/ID.zip")
    mode.add_argument("--replay", type=Path, metavar="DIR", help="replay DIR/ID.zip instead of a model")
    rp = commands.add_parser("replay", help="replay a task's trajectory on a desktop, checking every frame")
    rp.add_argument("trajectory", type=Path, help="a zip of GET /tasks/{id}/trajectory")
    rp.add_argument("--url", required=True, help="the desktop service to replay on")
    rp.add_argument("--token", help="its token (default: $DESKPILOT_TOKEN)")
    rp.add_argument("--timeout", type=_seconds, default=TIMEOUT, help="s a step's screen has to match (5)")
    rp.add_argument(
        "--mask", type=_box, action="append", default=[], metavar="X,Y,W,H", help="screen pixels to leave out"
    )
    rp.add_argument(
        "--threshold", type=_level, default=THRESHOLD, help="levels a pixel moves by to count (32)"
    )
    rp.add_argument(
        "--tolerance", type=_share, default=TOLERANCE, help="share of a tile that may move (0.02)"
    )
    rp.add_argument("--out", type=Path, help="where a divergence's frames go (default: a new temporary one)")
    add_commands(commands)
    return run(parser.parse_args(argv))


def _box(text: str) -> Box:
    try:
        x, y, width, height = (int(v) for v in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: give x,y,width,height in screen pixels") from None
    if min(x, y) < 0 or min(width, height) <= 0:
        raise argparse.ArgumentTypeError(f"{text!r}: a box on the screen, its width and height above 0")
    return x, y, width, height


def _bounded(kind: Callable[[str], float], low: float, high: float, what: str) -> Callable[[str], float]:
    """An argparse type: ``kind`` of the text, within [low, high]."""

    def parse(text: str) -> float:
        try:
            value = kind(text)
        except ValueError:
            value = low - 1
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"{text!r}: {what}")
        return value

    return parse


_seconds = _bounded(float, 0, 600, "seconds, 0 to 600")
_level = _bounded(int, 0, 254, "levels of 255, 0 to 254")
_share = _bounded(float, 0, 0.99, "a share of a tile's pixels, 0 to 0.99")


def _jobs(text: str) -> int:
    return int(_bounded(int, 1, 64, "a number of sandboxes, 1 to 64")(text))


def replay_command(args: argparse.Namespace) -> int:
    token = args.token or os.environ.get("DESKPILOT_TOKEN")
    try:
        with Desktop(args.url, token) as desktop:
            result = replay(
                args.trajectory,
                desktop,
                args.tolerance,
                args.out,
                timeout=args.timeout,
                threshold=args.threshold,
                masks=tuple(args.mask),
            )
    except (OSError, zipfile.BadZipFile, KeyError, ValueError) as exc:
        print(f"deskpilot replay: {args.trajectory}: {exc}", file=sys.stderr)
        return 2
    except ClientError as exc:
        print(f"deskpilot replay: {exc}", file=sys.stderr)
        return 2
    print(replay_summary(result))
    if result.divergence is None:
        return 0
    for path in result.divergence.files:
        print(path)
    return 1


def replay_summary(result: ReplayResult) -> str:
    """What was replayed and compared; a frame is said to match only when it was compared."""
    said = f"{result.replayed} of {result.steps} steps replayed ({result.skipped} skipped)"
    said += f" in {result.seconds:.1f} s"
    matched = result.compared - result.diverged
    said += f": {_count(result.compared, 'frame')} compared, {matched} matched"
    said += f" ({result.waited} after waiting)" if result.waited else ""
    said += f", {_count(result.unframed, 'step')} without a frame" if result.unframed else ""
    d = result.divergence
    if d is None:
        return said
    where = f" from x={d.where[0]},y={d.where[1]}, {d.where[2]}x{d.where[3]} px" if d.where else ""
    return (
        f"{said}; step {d.step} diverged after {d.waited:.1f} s: {_count(d.tiles, 'tile')} differ"
        f" ({d.changed:.1%}){where}: {_short(d.action)}"
    )


def _short(action: dict[str, Any]) -> str:
    said = repr(action)
    return said if len(said) <= 200 else said[:199] + "…"


def _count(n: int, what: str) -> str:
    return f"{n} {what}{'' if n == 1 else 's'}"


def eval_command(args: argparse.Namespace) -> int:
    # here, not at the top: the evaluation needs the client extra (PyYAML, Jinja2), the base install lacks it
    from deskpilot.evaluation.progress import Progress
    from deskpilot.evaluation.report import as_json, write_reports
    from deskpilot.evaluation.runner import TRAJECTORIES, CannotRun, run_suite, sandboxes
    from deskpilot.evaluation.suite import SuiteError, load_suite

    try:
        tasks = load_suite(args.suite)
    except SuiteError as exc:
        print(f"deskpilot eval: {exc}", file=sys.stderr)
        return 2
    if args.jobs > 1 and args.url:
        print(
            "deskpilot eval: --jobs runs private sandboxes; an appliance at --url has one desktop",
            file=sys.stderr,
        )
        return 2

    def open_box() -> contextlib.AbstractContextManager[Sandbox]:
        return sandbox(
            url=args.url, agent_url=args.agent_url, token=args.token, image=args.image,
            services=("desktop", "tasks"),  # no UI: nobody looks at it
        )  # fmt: skip

    lines = sys.stderr if args.json else sys.stdout
    replay_out = args.out / "replay" if args.replay else None
    with Progress(len(tasks), lines, sys.stderr if sys.stderr.isatty() else None) as progress:
        if not args.url:
            boxes = sandboxes(args.jobs, len(tasks))
            progress.say(f"starting {boxes} sandbox{'es' if boxes > 1 else ''} for {len(tasks)} tasks")
        try:
            result = run_suite(
                args.suite.name,
                tasks,
                open_box,
                args.model,
                args.replay,
                replay_out,
                args.out / TRAJECTORIES,
                jobs=args.jobs,
                on_result=progress.finished,
            )
        except (CannotRun, ApplianceError, ClientError, httpx.HTTPError, OSError) as exc:
            print(f"deskpilot eval: {exc}", file=sys.stderr)
            return 2
    if args.save_trajectories:
        args.save_trajectories.mkdir(parents=True, exist_ok=True)
        for r in result.results:
            if r.trajectory:
                shutil.copyfile(r.trajectory, args.save_trajectories / f"{r.id}.zip")
    paths = write_reports(result, args.out)
    if args.json:
        print(json.dumps(as_json(result, args.out), indent=2))
    else:
        print(*paths, sep="\n")
        print(f"{result.passed}/{len(result.results)} passed ({result.score:.0%}) in {result.seconds:.1f} s")
    if result.unreachable:
        print("deskpilot eval: the appliance stopped answering during the run", file=sys.stderr)
        return 2
    return 0 if result.passed == len(result.results) else 1


# the modules of the `client` extra a command may need, by import name
CLIENT_EXTRA = {"PIL": "Pillow", "yaml": "PyYAML", "jinja2": "Jinja2"}


def run(args: argparse.Namespace) -> int:
    """The command; one that needs a module of the `client` extra missing here says so (exit 2)."""
    command = {"eval": eval_command, "replay": replay_command, "install": install_command, "up": up_command}
    try:
        return command[args.command](args)
    except ModuleNotFoundError as exc:
        if exc.name not in CLIENT_EXTRA:
            raise
        print(
            f"deskpilot {args.command}: needs {CLIENT_EXTRA[exc.name]}, of the client extra: "
            'pip install "deskpilot[client]"',
            file=sys.stderr,
        )
        return 2


if __name__ == "__main__":
    sys.exit(main())
