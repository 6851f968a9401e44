"""Scoring an agent on a suite of desktop tasks: ``deskpilot eval SUITE --model M``.

A suite is a folder (or a file) of task files in YAML (``suite.py``): setup, the instruction, checks and a
budget. The runner (``runner.py``) runs each task through the task API on a clean desktop, then its checks
(``checks.py``) against the desktop, and the report (``report.py``) is written as JSON, Markdown and HTML.
"""

from deskpilot.evaluation.runner import SuiteResult, TaskResult, run_suite
from deskpilot.evaluation.suite import EvalTask, load_suite

__all__ = ["EvalTask", "SuiteResult", "TaskResult", "load_suite", "run_suite"]
