"""One native sandbox for the client's tests (deskpilot.sandbox(): scripts/appliance.sh on a free display and
free ports, with a token of its own), its agent talking to the session's scripted model through LiteLLM."""

from __future__ import annotations

import asyncio
import importlib.metadata
from collections.abc import Callable, Iterator
from typing import Any

import pytest

import deskpilot
from deskpilot.client import Sandbox
from deskpilot.scripted import ScriptedModel
from testbed.appliance import model_settings

PLUGIN = "deskpilot.client.pytest_plugin"


class Driver:
    """A blocking client or an asyncio one behind one blocking interface, so each scenario runs on both;
    the methods called are added to ``covered`` as (mode, name)."""

    def __init__(self, client: Any, covered: set[tuple[str, str]]) -> None:
        self.client = client
        self.mode = "async" if hasattr(client, "aclose") else "sync"
        self.covered = covered
        self.loop = asyncio.new_event_loop()

    def __getattr__(self, name: str) -> Callable[..., Any]:
        method = getattr(self.client, name)
        self.covered.add((self.mode, name))
        if self.mode == "sync":
            return method
        return lambda *args, **kw: self.loop.run_until_complete(method(*args, **kw))

    def __enter__(self) -> Driver:
        return self

    def __exit__(self, *exc: object) -> None:
        if self.mode == "async":
            self.loop.run_until_complete(self.client.aclose())
        else:
            self.client.close()
        self.loop.close()


def plugin_args() -> list[str]:
    """``-p`` the plugin when this venv's install of the package predates its pytest11 entry point."""
    installed = {e.value for e in importlib.metadata.entry_points(group="pytest11")}
    return [] if PLUGIN in installed else ["-p", PLUGIN]


@pytest.fixture(scope="session")
def scripted() -> Iterator[ScriptedModel]:
    with ScriptedModel().serve() as model:
        yield model


@pytest.fixture
def model(scripted: ScriptedModel) -> ScriptedModel:
    """The session's scripted model with an empty script: ``.play([...])`` (or ``plan=``) in the test."""
    scripted.play([])
    return scripted


@pytest.fixture(scope="session")
def box(scripted: ScriptedModel) -> Iterator[Sandbox]:
    # accessibility on, as a user of the accessibility action switches it on (test_desktop_client.py)
    settings = {**model_settings(scripted), "DESKTOP_ACCESSIBILITY": "on"}
    with deskpilot.sandbox(settings=settings) as sandbox:
        yield sandbox


@pytest.fixture
def clean(box: Sandbox) -> Sandbox:
    box.reset()
    return box
