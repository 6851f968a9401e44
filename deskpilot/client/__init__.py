"""The Python client of a Deskpilot appliance, installable on its own (``pip install "deskpilot[client]"``):

``Desktop``/``AsyncDesktop`` drive the desktop (one typed method per action), ``Agent``/``AsyncAgent`` run
tasks on the task service and wait for them on its event stream, ``sandbox()`` starts a private appliance
and gives clients of it. It imports only the contracts, the desktop's
(``deskpilot.computer``) and the task API's (``deskpilot.taskapi``), never a service.
"""

from deskpilot.client.agent import Agent, AsyncAgent
from deskpilot.client.calls import STOPPED, TaskClientError
from deskpilot.client.sandboxes import ApplianceError, Sandbox, sandbox
from deskpilot.computer.client import AsyncDesktop, Desktop, DesktopClientError
from deskpilot.computer.results import FileData, Point, ScreenImage
from deskpilot.errors import ClientError
from deskpilot.taskapi.types import MessageOut, ModelOut, TaskDetail, TaskOut, TaskPriority, TaskStatus

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
