"""Shared fixtures: one private Xvfb + window manager for the session, anyio on asyncio, and no security
settings from the developer's environment."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from testbed import security
from testbed.xvfb import Display, managed_display

pytest_plugins = ["pytester"]  # the pytest plugin's tests (tests/integration/client/test_plugin.py)


@pytest.fixture(scope="session", autouse=True)
def no_security_from_the_environment() -> Iterator[None]:
    """Services the tests start (in-process or as subprocesses) see only the token a test gives them."""
    with pytest.MonkeyPatch.context() as mp:
        for name in [n for n in os.environ if n.upper() in security.VARIABLES]:  # pydantic ignores case
            mp.delenv(name)
        yield


@pytest.fixture(scope="session")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="session")
def display() -> Iterator[Display]:
    """A 1920x1080x24 Xvfb on a free display number, managed by xfwm4; torn down after the session."""
    with managed_display() as d:
        yield d
