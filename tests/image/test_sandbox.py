"""deskpilot.sandbox(image=...): the image built from this checkout, run on the engine, ready clients with
the sandbox's own token, and nothing left (container, volumes) when the block ends."""

from __future__ import annotations

import pytest

import deskpilot
from testbed.container import docker

pytestmark = pytest.mark.image


def test_a_sandbox_from_the_image_is_ready_and_leaves_nothing(image: str) -> None:
    containers = set(docker("ps", "-aq").split())
    volumes = set(docker("volume", "ls", "-q").split())
    with deskpilot.sandbox(image=image, timeout=180) as box:
        assert box.desktop.screenshot().size == (1920, 1080)
        assert box.agent.tasks() == []
        box.desktop.write_file("x.txt", "x")
        box.reset()
        assert box.agent.health()["status"] == "ok"
    # nothing new is left; others may have gone meanwhile (a `docker run --rm` of another test is removed
    # by the daemon after it exits, asynchronously)
    assert set(docker("ps", "-aq").split()) <= containers
    assert set(docker("volume", "ls", "-q").split()) <= volumes
