"""An evaluation's report, written three ways from one result: ``report.json`` for machines,
``report.md`` for a pull request or a CI summary, ``report.html`` to open in a browser."""

from __future__ import annotations

import dataclasses
import json
from html import escape
from pathlib import Path

from deskpilot.evaluation.runner import SuiteResult, TaskResult


def write_reports(result: SuiteResult, out: Path) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    files = {
        "report.json": json.dumps(as_json(result), indent=2) + "\n",
        "report.md": markdown(result),
        "report.html": html(result),
    }
    for name, text in files.items():
        (out / name).write_text(text)
    return [out / name for name in files]


def as_json(result: SuiteResult) -> dict[str, object]:
    return {
        "suite": result.suite,
        "model": result.model,
        "replay": result.replay,
        "started": result.started,
        "passed": result.passed,
        "total": len(result.results),
        "score": round(result.score, 4),
        "tasks": [dataclasses.asdict(r) for r in result.results],
    }


def _what_ran(result: SuiteResult) -> str:
    """Who acted: the model, or (a replay) the trajectories, with no model."""
    if result.replay is not None:
        return f"Replay of the trajectories in `{result.replay}` (no model), started {result.started}."
    return f"Model `{result.model or 'default'}`, started {result.started}."


def _why(r: TaskResult) -> str:
    failed = [f"{c.check}: {c.detail}" for c in r.checks if not c.passed]
    first = (r.replay or {}).get("firstDivergence")
    diverged = [f"frames diverged from step {first['step']}"] if isinstance(first, dict) else []
    return "; ".join(([r.error] if r.error else []) + failed + diverged)


def markdown(result: SuiteResult) -> str:
    lines = [
        f"# {result.suite}: {result.passed}/{len(result.results)} passed ({result.score:.0%})",
        "",
        _what_ran(result),
        "",
        "| task | result | status | time | steps | tokens | why | trajectory |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in result.results:
        trajectory = f"[download]({r.trajectory})" if r.trajectory else ""
        why = _why(r).replace("|", "\\|")
        verdict = "pass" if r.passed else "**fail**"
        cells = [r.id, verdict, r.status, f"{r.seconds:.1f} s", str(r.steps), str(r.tokens), why, trajectory]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def _row(r: TaskResult) -> str:
    verdict = "pass" if r.passed else "fail"
    link = f'<a href="{escape(r.trajectory)}">download</a>' if r.trajectory else ""
    cells = [escape(r.id), verdict, escape(r.status), f"{r.seconds:.1f} s", str(r.steps), str(r.tokens)]
    cells += [escape(_why(r)), link]
    return f"<tr class={verdict}>" + "".join(f"<td>{c}</td>" for c in cells) + "</tr>"


def html(result: SuiteResult) -> str:
    rows = "".join(_row(r) for r in result.results)
    title = f"{result.suite}: {result.passed}/{len(result.results)} passed ({result.score:.0%})"
    return (
        "<!doctype html><meta charset=utf-8>"
        f"<title>{escape(title)}</title>"
        "<style>body{font:14px system-ui;margin:2em}table{border-collapse:collapse}"
        "td,th{border:1px solid #ccc;padding:4px 8px;text-align:left}"
        "tr.pass td:nth-child(2){color:#080}tr.fail td:nth-child(2){color:#b00;font-weight:bold}</style>"
        f"<h1>{escape(title)}</h1><p>{escape(_what_ran(result)).replace('`', '')}</p>"
        "<table><tr><th>task</th><th>result</th><th>status</th><th>time</th><th>steps</th><th>tokens</th>"
        "<th>why</th>"
        f"<th>trajectory</th></tr>{rows}</table>\n"
    )
