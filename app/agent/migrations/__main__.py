"""`python -m app.agent.migrations <alembic args>`: the alembic CLI on these scripts and DATABASE_URL."""

from __future__ import annotations

import sys

from alembic.config import CommandLine

from app.agent.db import async_url
from app.agent.migrations import alembic_config
from app.config import AgentSettings


def main(argv: list[str]) -> None:
    cli = CommandLine(prog="python -m app.agent.migrations")
    options = cli.parser.parse_args(argv)
    cfg = alembic_config(async_url(AgentSettings().database_url))
    cfg.cmd_opts = options
    cli.run_cmd(cfg, options)


if __name__ == "__main__":
    main(sys.argv[1:])
