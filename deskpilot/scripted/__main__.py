"""``python -m deskpilot.scripted plan.yaml [--host H] [--port P] [--latency-ms MS]``: serve a plan until
interrupted; each answer takes ``--latency-ms`` as a real provider's would.

``--then '{"calls": [["computer_wait", {"duration": 1}]]}'`` instead of a plan answers every request with
that one step (what the benchmarks use).
"""

from __future__ import annotations

import argparse
import contextlib
import sys

import orjson

from deskpilot.scripted.plan import Plan, PlanError
from deskpilot.scripted.server import ScriptedModel
from deskpilot.scripted.steps import Answer


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m deskpilot.scripted", description=__doc__.split("\n")[0])
    ap.add_argument("plan", nargs="?", help="the plan: a YAML or JSON file (docs/client.md)")
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=8765)
    ap.add_argument("--then", help="instead of a plan: one step as JSON, the answer to every request")
    ap.add_argument(
        "--latency-ms", type=float, default=0.0, help="each answer takes this long, as a provider's"
    )
    args = ap.parse_args(argv)
    if bool(args.plan) == bool(args.then):
        ap.error("give a plan file or --then, not both")
    try:
        plan = Plan.load(args.plan) if args.plan else None
        model = ScriptedModel(
            plan=plan, then=None if plan else _step(args.then), latency=args.latency_ms / 1000
        )
    except (PlanError, ValueError, TypeError) as exc:
        print(f"deskpilot.scripted: {exc}", file=sys.stderr)
        return 2
    print(
        f"scripted model {model.model!r} on http://{args.host}:{args.port}/v1 "
        f"(AGENT_OPENAI_BASE_URL=http://{args.host}:{args.port}/v1 AGENT_MODEL=local/{model.model})",
        file=sys.stderr,
        flush=True,
    )
    with contextlib.suppress(KeyboardInterrupt):
        model.serve_forever(args.host, args.port)
    return 0


def _step(source: str) -> Answer:
    data = orjson.loads(source)
    return Answer(**{**data, "calls": [(name, call) for name, call in data.get("calls", [])]})


if __name__ == "__main__":
    sys.exit(main())
