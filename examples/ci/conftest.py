"""The appliance's model for these tests: the scripted one, serving plan.yaml, so no provider key is needed.
Delete this file (and set ANTHROPIC_API_KEY, OPENAI_API_KEY ... in CI) to test with a real model."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from deskpilot.scripted import Plan, ScriptedModel


@pytest.fixture(scope="session")
def deskpilot_settings() -> Iterator[dict[str, str]]:
    with ScriptedModel(plan=Plan.load(Path(__file__).with_name("plan.yaml"))).serve() as model:
        yield {"AGENT_OPENAI_BASE_URL": model.base_url, "AGENT_MODEL": f"local/{model.model}"}
