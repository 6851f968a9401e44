"""``deskpilot``: the command line of the package's tools.

    deskpilot eval SUITE [--model M] [--url URL [--agent-url URL] [--token T] | --image TAG] [--out DIR]

``eval`` scores a model on a suite of task files (docs/evaluation.md): against the appliance at ``--url``,
or a private sandbox (native, or from ``--image``) started for the run and stopped after it. It exits 0
when every task passed, 1 when some failed, 2 on bad usage or an unreadable suite.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from deskpilot.client.sandboxes import ApplianceError, sandbox
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
    args = parser.parse_args(argv)

    try:
        tasks = load_suite(args.suite)
    except SuiteError as exc:
        print(f"deskpilot eval: {exc}", file=sys.stderr)
        return 2
    try:
        with sandbox(url=args.url, agent_url=args.agent_url, token=args.token, image=args.image) as box:
            result = run_suite(args.suite.name, tasks, box, args.model)
    except ApplianceError as exc:
        print(f"deskpilot eval: {exc}", file=sys.stderr)
        return 2
    for path in write_reports(result, args.out):
        print(path)
    print(f"{result.passed}/{len(result.results)} passed ({result.score:.0%})")
    return 0 if result.passed == len(result.results) else 1


if __name__ == "__main__":
    sys.exit(main())
