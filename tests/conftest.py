"""Shared fixtures: one private Xvfb + window manager for the session, anyio on asyncio."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.xvfb import Display, managed_display


@pytest.fixture(scope="session")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="session")
def display() -> Iterator[Display]:
    """A 1920x1080x24 Xvfb on a free display number, managed by xfwm4; torn down after the session."""
    with managed_display() as d:
        yield d
