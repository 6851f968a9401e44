"""The image under test: built from this checkout by scripts/build-image.sh, as `make image` builds it.

Where no engine can be had (not root, no apt-get) the image tests are skipped, except under CI, which must
build and boot the image on every run.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterator

import pytest

from tests.support.container import ROOT, EngineUnavailable, build, docker, start_engine


@pytest.fixture(scope="session")
def image() -> Iterator[str]:
    try:
        start_engine()
    except EngineUnavailable as e:
        if os.environ.get("CI"):
            pytest.fail(f"CI builds the image, but no Docker engine can be had: {e}")
        pytest.skip(f"no Docker engine can be had here: {e}")
    # One tag per checkout: worktrees testing side by side do not replace each other's image.
    tag = f"deskpilot-test:{hashlib.sha256(str(ROOT).encode()).hexdigest()[:12]}"
    build(tag)
    yield tag
    docker("rmi", tag, check=False)  # its layers stay in the build cache for the next run
