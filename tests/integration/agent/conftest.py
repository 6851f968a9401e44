"""Agent-loop fixtures, one each per session: a display and the desktop service on it (its files in a
private directory, not the real ~/Desktop), the scripted LLM, and a real LiteLLM proxy in front of it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from deskpilot.config import DesktopSettings
from deskpilot.scripted import ScriptedModel
from testbed.agent_loop import Agent, loop_settings, serve_agent
from testbed.desktop_files import private_files_dir
from testbed.net import ServerThread
from testbed.xvfb import Display, managed_display
from tests.fakes.llm_proxy import LiteLLMProxy, litellm_proxy


@pytest.fixture(scope="session")
def scripted_server() -> Iterator[ScriptedModel]:
    with ScriptedModel().serve() as llm:
        yield llm


@pytest.fixture
def scripted_llm(scripted_server: ScriptedModel) -> ScriptedModel:
    """The session's scripted LLM with an empty script: call ``.play([...])`` in the test."""
    scripted_server.play([])
    return scripted_server


@pytest.fixture(scope="session")
def llm_proxy(scripted_server: ScriptedModel) -> Iterator[LiteLLMProxy]:
    """A real ``litellm --config`` proxy on loopback (master key set) whose one model is the scripted LLM."""
    with litellm_proxy(scripted_server.base_url) as proxy:
        yield proxy


@pytest.fixture(scope="session")
def loop_display() -> Iterator[Display]:
    """An Xvfb + xfwm4 of these tests' own: the programs the agent opens (a terminal ...) stay off the
    display the desktop-service tests use, and die with this display at the end."""
    with managed_display() as d:
        yield d


@pytest.fixture(scope="session")
def desktop_files() -> Iterator[Path]:
    """Where the desktop service's relative paths and the tasks' uploads go (owned by the desktop user)."""
    with private_files_dir() as path:
        yield path


@pytest.fixture(scope="session")
def desktop_url(loop_display: Display, desktop_files: Path) -> Iterator[str]:
    """The real desktop service on that Xvfb, over real HTTP."""
    from deskpilot.desktop.api import create_app

    settings = DesktopSettings(display=loop_display.name, files_dir=desktop_files)
    with ServerThread(create_app(settings)) as server:
        yield server.url


@pytest.fixture
def agent(
    tmp_path: Path, desktop_url: str, desktop_files: Path, scripted_llm: ScriptedModel
) -> Iterator[Agent]:
    """A task service with a worker on the session's desktop and scripted model (SQLite of its own)."""
    settings = loop_settings(tmp_path / "agent.db", desktop_url, scripted_llm.base_url, desktop_files)
    with serve_agent(settings) as a:
        yield a
