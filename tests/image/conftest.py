"""The image under test: built from this checkout by scripts/build-image.sh, as `make image` builds it.

Where no engine can be had (not root, no apt-get) the image tests are skipped, except under CI, which must
build and boot the image on every run.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterator

import pytest

from testbed import ROOT
from testbed.container import EngineUnavailable, build, docker, start_engine

_no_engine: list[str] = []


def pytest_collection_finish(session: pytest.Session) -> None:
    """Start the engine before any test runs, when image tests are selected. A daemon started later, while
    an e2e test has made this process a child subreaper (testbed/appliance.py), would be adopted by it
    and counted among that appliance's leftovers; started now, it is adopted by init."""
    if any(item.get_closest_marker("image") for item in session.items):
        try:
            start_engine()
        except EngineUnavailable as e:
            _no_engine.append(str(e))


@pytest.fixture(scope="session")
def image() -> Iterator[str]:
    if _no_engine:
        if os.environ.get("CI"):
            pytest.fail(f"CI builds the image, but no Docker engine can be had: {_no_engine[0]}")
        pytest.skip(f"no Docker engine can be had here: {_no_engine[0]}")
    start_engine()  # still answering (a no-op then)
    # One tag per checkout: worktrees testing side by side do not replace each other's image.
    tag = f"deskpilot-test:{hashlib.sha256(str(ROOT).encode()).hexdigest()[:12]}"
    build(tag)
    yield tag
    docker("rmi", tag, check=False)  # its layers stay in the build cache for the next run
