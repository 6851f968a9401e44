"""supervisord, starting its programs as soon as it has begun rather than a second later.

supervisord starts (and restarts) programs at the end of each pass of its main loop, after a poll of its
sockets that waits up to a second; nothing wakes the first one, so every start of the appliance waited a
second before the first program was spawned. Here the first poll does not wait; the later ones are
supervisord's own. Run with the venv's interpreter and supervisord's arguments (scripts/appliance.sh).
"""

from __future__ import annotations

import sys
from typing import Any

from supervisor import poller
from supervisor.supervisord import main

_poll = poller.Poller.poll
_started: list[bool] = []


def _first_at_once(self: Any, timeout: float) -> Any:
    if not _started:
        _started.append(True)
        timeout = 0
    return _poll(self, timeout)


poller.Poller.poll = _first_at_once  # type: ignore[method-assign]

if __name__ == "__main__":
    sys.exit(main())
