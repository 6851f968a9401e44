"""`python -m deskpilot.tasks.migrations <alembic args>`: the alembic CLI on these scripts, DATABASE_URL."""

from __future__ import annotations

import sys

from alembic.config import CommandLine

from deskpilot.config import TaskSettings
from deskpilot.tasks.db import async_url
from deskpilot.tasks.migrations import alembic_config


def main(argv: list[str]) -> None:
    cli = CommandLine(prog="python -m deskpilot.tasks.migrations")
    options = cli.parser.parse_args(argv)
    cfg = alembic_config(async_url(TaskSettings().database_url))
    cfg.cmd_opts = options
    cli.run_cmd(cfg, options)


if __name__ == "__main__":
    main(sys.argv[1:])
