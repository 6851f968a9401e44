"""``deskpilot.sandbox()``: a private appliance for a test run, and ready clients of it.

    with deskpilot.sandbox() as box:                  # natively, the package's scripts/appliance.sh (as root)
        box.desktop.application("terminal")
        task = box.agent.create("...")

    deskpilot.sandbox(image="deskpilot")              # from the image, on a Docker engine
    deskpilot.sandbox(url="http://host:9990", token=...)  # an appliance that runs already

A native or image sandbox listens on free loopback ports and a free display, with a random token of its own
(``DESKPILOT_TOKEN``) that its clients send; leaving the block stops it and leaves nothing behind (processes,
display, container, volumes, directories). Attached to a URL, nothing is started or stopped: the token is
``token=`` or ``$DESKPILOT_TOKEN`` (an appliance listening beyond loopback generates one into its state
directory, ``/var/lib/deskpilot/token``).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from deskpilot.client.agent import Agent, AsyncAgent
from deskpilot.client.container import ImageAppliance, start_engine
from deskpilot.client.native import ROOT, SERVICES, ApplianceError, NativeAppliance, new_token
from deskpilot.computer.client import AsyncDesktop, Desktop

__all__ = ["ApplianceError", "Sandbox", "sandbox"]


def next_port(url: str) -> str:
    """The task service beside a desktop service: the same host, the next port (9990 -> 9991)."""
    parts = urlsplit(url)
    port = parts.port or (443 if parts.scheme == "https" else 80)
    return urlunsplit(parts._replace(netloc=f"{parts.hostname}:{port + 1}", path=""))


@dataclass
class Sandbox:
    """An appliance's URLs and token, with a blocking client of each service (``desktop``, ``agent``). A
    service the sandbox did not start with it (``sandbox(services=...)``) starts when first used: the task
    service at ``agent``'s first use, the UI at ``start("ui")``."""

    desktop_url: str
    agent_url: str
    token: str | None = None
    ui_url: str | None = None
    ready_seconds: float = 0.0  # start to ready (0 when attached)
    services: tuple[str, ...] = SERVICES  # those running
    starter: Callable[[str], None] | None = field(default=None, repr=False)  # starts one that is not
    desktop: Desktop = field(init=False)
    _agent: Agent = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self.desktop = Desktop(self.desktop_url, self.token)
        self._agent = Agent(self.agent_url, self.token)

    @property
    def agent(self) -> Agent:
        self.start("tasks")
        return self._agent

    def start(self, service: str) -> None:
        """Start ``service`` (``tasks`` or ``ui``) when it did not start with the sandbox, and wait until
        it answers; nothing when it runs."""
        if service not in SERVICES:
            raise ValueError(f"no service {service!r}: {', '.join(SERVICES)}")
        if service in self.services:
            return
        if self.starter is None:
            raise ApplianceError(f"this sandbox cannot start its {service} service")
        self.starter(service)
        self.services += (service,)

    def async_desktop(self) -> AsyncDesktop:
        """A new asyncio client of the desktop (close it: ``async with``)."""
        return AsyncDesktop(self.desktop_url, self.token)

    def async_agent(self) -> AsyncAgent:
        """A new asyncio client of the task service (close it: ``async with``)."""
        self.start("tasks")
        return AsyncAgent(self.agent_url, self.token)

    def reset(self) -> None:
        """A clean state: every task deleted (a running one stopped first), then ``POST /reset`` (keys
        released, applications closed, the home back to its skeleton)."""
        if "tasks" in self.services:
            self._agent.clear()
        self.desktop.reset()

    def close(self) -> None:
        self.desktop.close()
        self._agent.close()


@contextlib.contextmanager
def sandbox(
    *,
    image: str | None = None,
    url: str | None = None,
    agent_url: str | None = None,
    token: str | None = None,
    settings: Mapping[str, str] | None = None,
    timeout: float = 120,
    checkout: str | Path | None = None,
    services: Iterable[str] = SERVICES,
) -> Iterator[Sandbox]:
    """A private appliance (natively, or from ``image``) or the one at ``url`` (its desktop service; the
    task service at ``agent_url``, by default the next port). ``settings`` are more of the appliance's
    variables (docs/operations.md), e.g. ``AGENT_OPENAI_BASE_URL`` and ``AGENT_MODEL`` for a scripted
    model; ``checkout`` is the Deskpilot checkout a native sandbox runs from (default: the installed
    package's copy of the appliance, or the checkout it is imported from). ``services`` are those a native
    sandbox starts with it (the desktop's always; the others start when first used: ``Sandbox``): a test
    of the desktop alone starts in less time and CPU with ``services=["desktop"]``. An image starts all."""
    services = tuple(services)
    if unknown := set(services) - set(SERVICES):
        raise ValueError(f"no service {', '.join(sorted(unknown))}: {', '.join(SERVICES)}")
    if url is not None:
        box = Sandbox(url.rstrip("/"), (agent_url or next_port(url)).rstrip("/"), token or _env_token())
        try:
            yield box
        finally:
            box.close()
        return
    token = token or new_token()
    if image is not None:
        start_engine()
        appliance: NativeAppliance | ImageAppliance = ImageAppliance(
            image, env=dict(settings or {}), token=token
        )
    else:
        checkout = Path(checkout) if checkout else ROOT
        wanted = tuple(s for s in SERVICES if s == "desktop" or s in services)
        appliance = NativeAppliance(
            checkout=checkout, token=token, settings=dict(settings or {}), services=wanted
        )
    with _running(appliance, token, timeout) as box:
        yield box


def _env_token() -> str | None:
    return os.environ.get("DESKPILOT_TOKEN") or None


@contextlib.contextmanager
def _running(appliance: NativeAppliance | ImageAppliance, token: str, timeout: float) -> Iterator[Sandbox]:
    """The appliance started and ready, its clients for the block, then everything stopped and removed."""
    leftovers: list[str] = []
    try:
        appliance.start()
        seconds = appliance.wait_ready(timeout)
        box = Sandbox(
            appliance.desktop_url, appliance.agent_url, token, appliance.ui_url, seconds, appliance.services,
            appliance.start_service,
        )  # fmt: skip
        try:
            yield box
        finally:
            box.close()
    finally:
        leftovers = appliance.shutdown()
    if leftovers:
        raise ApplianceError(f"processes left running after the appliance stopped (killed): {leftovers}")
