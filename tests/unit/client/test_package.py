"""The client package names its public API once and imports each part at first use: the reaper every native
sandbox starts imports none of it."""

from __future__ import annotations

import subprocess
import sys

import deskpilot.client


def test_every_public_name_resolves_to_its_module() -> None:
    assert set(deskpilot.client._MODULES) == set(deskpilot.client.__all__)
    for name in deskpilot.client.__all__:
        value = getattr(deskpilot.client, name)
        assert value is getattr(sys.modules[deskpilot.client._MODULES[name]], name)


def test_the_reaper_imports_no_client() -> None:
    loaded = subprocess.run(
        [sys.executable, "-c", "import sys, deskpilot.client.reaper; print(' '.join(sys.modules))"],
        capture_output=True, text=True, check=True,
    ).stdout.split()  # fmt: skip
    assert not {"httpx", "pydantic", "deskpilot.client.sandboxes", "deskpilot.computer.client"} & set(loaded)
