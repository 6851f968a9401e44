"""The Python client of a Deskpilot appliance, installable on its own (``pip install "deskpilot[client]"``):

``Desktop``/``AsyncDesktop`` drive the desktop (one typed method per action), ``Agent``/``AsyncAgent`` run
tasks on the task service and wait for them on its event stream, ``sandbox()`` starts a private appliance
and gives clients of it. It imports only the contracts, the desktop's
(``deskpilot.computer``) and the task API's (``deskpilot.taskapi``), never a service.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from deskpilot.client.agent import Agent, AsyncAgent
    from deskpilot.client.calls import STOPPED, TaskClientError
    from deskpilot.client.sandboxes import ApplianceError, Sandbox, sandbox
    from deskpilot.computer.client import AsyncDesktop, Desktop, DesktopClientError
    from deskpilot.computer.results import FileData, Point, ScreenImage
    from deskpilot.errors import ClientError
    from deskpilot.taskapi.types import MessageOut, ModelOut, TaskDetail, TaskOut, TaskPriority, TaskStatus

# each name's module, imported at the name's first use: ``python -m deskpilot.client.reaper`` (which every
# native sandbox starts) and ``processes`` need none of them, and importing them all costs ~0.5 s of CPU
_MODULES = {
    "Agent": "deskpilot.client.agent",
    "AsyncAgent": "deskpilot.client.agent",
    "STOPPED": "deskpilot.client.calls",
    "TaskClientError": "deskpilot.client.calls",
    "ApplianceError": "deskpilot.client.sandboxes",
    "Sandbox": "deskpilot.client.sandboxes",
    "sandbox": "deskpilot.client.sandboxes",
    "AsyncDesktop": "deskpilot.computer.client",
    "Desktop": "deskpilot.computer.client",
    "DesktopClientError": "deskpilot.computer.client",
    "FileData": "deskpilot.computer.results",
    "Point": "deskpilot.computer.results",
    "ScreenImage": "deskpilot.computer.results",
    "ClientError": "deskpilot.errors",
    **dict.fromkeys(
        ("MessageOut", "ModelOut", "TaskDetail", "TaskOut", "TaskPriority", "TaskStatus"),
        "deskpilot.taskapi.types",
    ),
}

__all__ = [
    "STOPPED",
    "Agent",
    "ApplianceError",
    "AsyncAgent",
    "AsyncDesktop",
    "ClientError",
    "Desktop",
    "DesktopClientError",
    "FileData",
    "MessageOut",
    "ModelOut",
    "Point",
    "Sandbox",
    "ScreenImage",
    "TaskClientError",
    "TaskDetail",
    "TaskOut",
    "TaskPriority",
    "TaskStatus",
    "sandbox",
]


def __getattr__(name: str) -> Any:
    module = _MODULES.get(name)
    if module is None:
        raise AttributeError(f"module 'deskpilot.client' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value
