"""The UI server logs in the one format of every service (``deskpilot.logs``) once its app is made."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]


def test_creating_the_ui_app_configures_the_one_log_format() -> None:
    code = (
        "import logging\n"
        "from deskpilot.logs import Formatter\n"
        "from deskpilot.ui.server import create_app\n"
        "create_app()\n"
        "logging.getLogger('deskpilot.ui.check').info('ready', extra={'port': 9992})\n"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stderr.rstrip().endswith(" INFO deskpilot.ui.check ready port=9992"), done.stderr
