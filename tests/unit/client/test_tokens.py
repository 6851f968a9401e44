"""The tokens the client makes for the appliances it starts (deskpilot.client.native.new_token)."""

from __future__ import annotations

import re

from deskpilot.client.native import new_token


def test_a_token_never_starts_with_a_dash() -> None:
    """A command line takes ``--token -x...`` for two options: one draw in 64 would start so (URL-safe
    base64), so 2,000 draws would show it."""
    tokens = {new_token() for _ in range(2000)}
    assert len(tokens) == 2000
    assert all(re.fullmatch(r"[A-Za-z0-9_][A-Za-z0-9_-]{42}", token) for token in tokens)
