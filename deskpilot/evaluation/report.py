"""An evaluation's report, written three ways from one result: ``report.json`` for machines,
``report.md`` for a pull request or a CI summary, ``report.html`` to open in a browser."""

from __future__ import annotations

import dataclasses
import json
import os
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jinja2

from deskpilot.computer.trajectory import StepView, read_steps
from deskpilot.evaluation.runner import SuiteResult, TaskResult

TEMPLATES = Path(__file__).with_name("templates")
FRAMES = "frames"  # beside the report: frames/<task id>/<frame id>.png, what the step viewer shows


@dataclass
class ReportStep:
    view: StepView
    words: str = ""  # what the model said with it (its steps only)


@dataclass
class TaskView:
    """A task as the HTML report shows it: its result, and its steps from its kept trajectory."""

    result: TaskResult
    trajectory: str | None  # the link to its zip, relative to the report
    steps: list[ReportStep] = field(default_factory=list)
    truncated: dict[str, Any] | None = None
    problem: str = ""  # why its steps cannot be shown


def write_reports(result: SuiteResult, out: Path) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    files = {
        "report.json": json.dumps(as_json(result, out), indent=2) + "\n",
        "report.md": markdown(result, out),
        "report.html": html(result, out),
    }
    for name, text in files.items():
        (out / name).write_text(text)
    return [out / name for name in files]


def link(r: TaskResult, out: Path | None) -> str | None:
    """The task's kept trajectory, relative to the report in ``out`` so the link outlives the sandbox and
    survives the folder being moved (a CI artifact)."""
    if not r.trajectory or out is None:
        return r.trajectory
    return Path(os.path.relpath(r.trajectory, out)).as_posix()


def as_json(result: SuiteResult, out: Path | None = None) -> dict[str, object]:
    """The report for machines; ``trajectory`` paths relative to ``out`` (the report's folder)."""
    return {
        "suite": result.suite,
        "model": result.model,
        "replay": result.replay,
        "started": result.started,
        "seconds": result.seconds,
        "jobs": result.jobs,
        "passed": result.passed,
        "total": len(result.results),
        "score": round(result.score, 4),
        "tasks": [{**dataclasses.asdict(r), "trajectory": link(r, out)} for r in result.results],
    }


def _what_ran(result: SuiteResult) -> str:
    """Who acted: the model, or (a replay) the trajectories, with no model."""
    took = f" in {result.seconds:.1f} s" if result.seconds else ""
    jobs = f" on {result.jobs} sandboxes" if result.jobs > 1 else ""
    if result.replay is not None:
        who = f"Replay of the trajectories in `{result.replay}` (no model)"
    else:
        who = f"Model `{result.model}`" if result.model else "No model ran"
    return f"{who}, started {result.started}{took}{jobs}."


def why(r: TaskResult) -> str:
    failed = [f"{c.check}: {c.detail}" for c in r.checks if not c.passed]
    first = (r.replay or {}).get("firstDivergence")
    diverged = [f"frames diverged from step {first['step']}"] if isinstance(first, dict) else []
    return "; ".join(([r.error] if r.error else []) + failed + diverged)


def _cell(text: str) -> str:
    """Text safe in one Markdown table cell: a pipe escaped, line breaks as <br> (a bare one ends the row)."""
    return "<br>".join(text.replace("|", "\\|").splitlines())


def markdown(result: SuiteResult, out: Path | None = None) -> str:
    lines = [
        f"# {result.suite}: {result.passed}/{len(result.results)} passed ({result.score:.0%})",
        "",
        _what_ran(result),
        "",
        "| task | result | status | time | steps | tokens | why | trajectory |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in result.results:
        zipped = link(r, out)
        trajectory = f"[zip]({zipped})" if zipped else ""
        verdict = "pass" if r.passed else "**fail**"
        cells = [
            r.id,
            verdict,
            r.status,
            f"{r.seconds:.1f} s",
            str(r.steps),
            str(r.tokens),
            why(r),
            trajectory,
        ]
        lines.append("| " + " | ".join(map(_cell, cells)) + " |")
    return "\n".join(lines) + "\n"


def task_view(r: TaskResult, out: Path | None) -> TaskView:
    """The task's steps from its kept trajectory, each frame written once to ``out/frames/<task id>/``."""
    view = TaskView(r, link(r, out))
    if not r.trajectory or out is None:
        return view
    folder = out / FRAMES / r.id

    def frame(frame_id: str, png: bytes) -> str:
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"{frame_id}.png").write_bytes(png)
        return f"{FRAMES}/{r.id}/{frame_id}.png"

    try:
        with zipfile.ZipFile(r.trajectory) as archive:
            read = read_steps(archive, frame)
    except (OSError, zipfile.BadZipFile, KeyError, ValueError) as exc:
        view.problem = f"its trajectory could not be read: {exc}"
        return view
    words = iter(r.words)
    view.steps = [ReportStep(s, next(words, "") if s.actor == "agent" else "") for s in read["steps"]]
    view.truncated = read["truncated"]
    return view


_templates = jinja2.Environment(
    loader=jinja2.FileSystemLoader(TEMPLATES), autoescape=True, undefined=jinja2.StrictUndefined
)


def html(result: SuiteResult, out: Path | None = None) -> str:
    """The report for a person: the table, then each task's checks and a step viewer (the frames before and
    after each step, its action, the model's words); the frames are files beside it, in ``out``."""
    title = f"{result.suite}: {result.passed}/{len(result.results)} passed ({result.score:.0%})"
    return _templates.get_template("report.html").render(
        title=title,
        what_ran=_what_ran(result).replace("`", ""),
        tasks=[task_view(r, out) for r in result.results],
        why=why,
    )
