"""Deskpilot: an open computer-use appliance.

``deskpilot.sandbox()``, ``deskpilot.Desktop`` and ``deskpilot.Agent`` are the client's
(``deskpilot.client``), imported when first used: the services import this package and must not load it.
"""

from __future__ import annotations

from typing import Any

__version__ = "0.1.0"

_CLIENT = frozenset({"sandbox", "Sandbox", "Desktop", "AsyncDesktop", "Agent", "AsyncAgent"})


def __getattr__(name: str) -> Any:
    if name in _CLIENT:
        from deskpilot import client

        return getattr(client, name)
    raise AttributeError(f"module 'deskpilot' has no attribute {name!r}")
