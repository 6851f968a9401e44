"""One appliance for the e2e session, booted from supervisord.conf and rootfs/ on a free display and ports,
with a token and a value for every variable of the task service's that must stay out of the desktop user's
reach."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from testbed.appliance import Appliance, agent_secrets


@pytest.fixture(scope="session")
def appliance() -> Iterator[Appliance]:
    a = Appliance(settings=agent_secrets()).start()
    try:
        a.boot_seconds = a.wait_ready()
        yield a
    finally:
        leftovers = a.stop()
        log = a.log_tail()
        a.cleanup()
    assert not leftovers, f"processes left behind after supervisord stopped: {leftovers}\n{log}"
