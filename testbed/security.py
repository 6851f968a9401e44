"""Security settings for the tests, from explicit values only: a token in a developer's shell
(``DESKPILOT_TOKEN`` ...) must not change what a test runs against."""

from __future__ import annotations

from typing import Any

from deskpilot.config import SecuritySettings
from deskpilot.security import digest

# Every variable SecuritySettings reads; the suite removes them from its environment (tests/conftest.py),
# so services the tests start in subprocesses do not see them either.
VARIABLES = (
    "DESKPILOT_TOKEN",
    "DESKPILOT_TOKEN_SHA256",
    "DESKPILOT_AUTH",
    "DESKPILOT_ALLOWED_HOSTS",
    "DESKTOP_MCP_ALLOWED_HOSTS",
    "DESKPILOT_ALLOWED_ORIGINS",
)
TOKEN = "test-token-5f0c2e9a7b1d4c38"  # long enough for the log masking (6 characters and more)


def security(**fields: Any) -> SecuritySettings:
    """These fields over an open, loopback-only default; nothing is read from the environment."""
    base: dict[str, Any] = {
        "token": None,
        "token_sha256": None,
        "auth": "on",
        "allowed_hosts": [],
        "allowed_origins": [],
    }
    return SecuritySettings(**{**base, **fields})


def with_token(**fields: Any) -> SecuritySettings:
    return security(token=TOKEN, **fields)


def with_digest(**fields: Any) -> SecuritySettings:
    """What the desktop service is given in the appliance: the token's digest, never the token."""
    return security(token_sha256=digest(TOKEN), **fields)


BEARER = {"Authorization": f"Bearer {TOKEN}"}
