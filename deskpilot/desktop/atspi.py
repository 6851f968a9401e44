"""The accessibility tree: AT-SPI spoken directly over D-Bus (dbus-fast, asyncio), for the ``accessibility``
action and the ``element`` of ``click_mouse`` and ``type_text``.

The AT-SPI bus is the desktop user's (at-spi-bus-launcher, started for the session; its address comes from the
session bus, ``org.a11y.Bus.GetAddress``, or ``AT_SPI_BUS_ADDRESS``) and admits only that user and root, so
this runs where the desktop user's rights are: in the ``hands`` worker (``hands.LocalHands``). The service
reaches it through ``Hands``, as it does files.

Speed: the GTK bridge of Debian 12 (at-spi2-core 2.46) serves no ``Cache.GetItems``, so a tree is walked
level by level, every call of a level sent at once and answered in one pipelined burst (role, states, name,
children, extents, then the text of the text roles): a few milliseconds per level instead of a round trip
per property, which is what makes pyatspi's walk slow (bench/accessibility.py measures both). Each
application's calls go over a direct connection to it where its bridge offers one (AT-SPI's
``GetApplicationBusAddress``, as libatspi does): a round trip without the bus daemon in the middle, a third
of a terminal's tree.

An element's ``id`` is its application's unique bus name and its object path (``1.42/117``): valid while
the element lives (a bus name is never reused while the bus runs); a call on a vanished one fails, and
``ElementGone`` says so.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from deskpilot.desktop import dbus_wire as wire
from deskpilot.desktop.dbus_wire import Call
from deskpilot.errors import AccessibilityUnavailable, InvalidAction

if TYPE_CHECKING:  # dbus-fast (~15 MiB) is imported where the bus is spoken to: the service never is
    from dbus_fast import Message
    from dbus_fast.aio import MessageBus

ACCESSIBLE = "org.a11y.atspi.Accessible"
COMPONENT = "org.a11y.atspi.Component"
TEXT = "org.a11y.atspi.Text"
APPLICATION = "org.a11y.atspi.Application"
PATH_PREFIX = "/org/a11y/atspi/accessible/"
ROOT = PATH_PREFIX + "root"
REGISTRY = "org.a11y.atspi.Registry"
CALL_TIMEOUT_S = 2.0  # a frozen application must not hold a tree (or a click) for ever
DIRECT_TIMEOUT_S = 0.5  # an application's own connection: connected and greeted within this, or not used
# calls in flight at once: dbus-fast (5.2) breaks the connection when the socket's send buffer is full (it
# does not retry EAGAIN), and 128 small calls (~25 KB) stay well within a Unix socket's (~200 KB)
IN_FLIGHT = 128

MAX_NODES = 2000  # per tree: a bigger one is cut, breadth first (the top of the tree is what is kept)
MAX_TEXT = 2000  # characters of one node's text
MAX_TEXT_TOTAL = 50_000  # characters of text in one tree

# AT-SPI's state enumeration (atspi-constants.h), by bit, in its own words lower case
STATES = (
    "invalid",
    "active",
    "armed",
    "busy",
    "checked",
    "collapsed",
    "defunct",
    "editable",
    "enabled",
    "expandable",
    "expanded",
    "focusable",
    "focused",
    "has tooltip",
    "horizontal",
    "iconified",
    "modal",
    "multi line",
    "multiselectable",
    "opaque",
    "pressed",
    "resizable",
    "selectable",
    "selected",
    "sensitive",
    "showing",
    "single line",
    "stale",
    "transient",
    "vertical",
    "visible",
    "manages descendants",
    "indeterminate",
    "required",
    "truncated",
    "animated",
    "invalid entry",
    "supports autocompletion",
    "selectable text",
    "is default",
    "visited",
    "checkable",
    "has popup",
    "read only",
)
# roles whose text is the content (a document's text is its children's)
TEXT_ROLES = frozenset({"text", "entry", "password text", "terminal", "paragraph", "heading", "label"})
INTERACTIVE_ROLES = frozenset(
    {"push button", "toggle button", "check box", "radio button", "menu item", "check menu item"}
    | {"radio menu item", "menu", "combo box", "entry", "password text", "text", "link", "page tab"}
    | {"spin button", "slider", "terminal", "list item", "table cell", "tree item", "toggle button"}
    | {"push button menu", "editbar", "scroll bar"}
)
ID = re.compile(r"^(\d+\.\d+)/([A-Za-z0-9_/]{1,200})$")

Ref = tuple[str, str]  # (unique bus name, object path)


def element_id(ref: Ref) -> str:
    bus, path = ref
    return f"{bus.removeprefix(':')}/{path.removeprefix(PATH_PREFIX)}"


def parse_id(element: str) -> Ref:
    """An id as ``element_id`` wrote it → (bus name, path); InvalidAction for anything else."""
    found = ID.match(element)
    if found is None:
        raise InvalidAction(
            f"{element!r} is not an element id (as the accessibility action answers: '1.42/117')"
        )
    return f":{found[1]}", PATH_PREFIX + found[2]


def state_names(bits: Sequence[int]) -> list[str]:
    word = sum(int(b) << (32 * i) for i, b in enumerate(bits[:2]))
    names = []
    while word:  # the bits set, lowest first (a node has a handful of the 42)
        low = word & -word
        if (bit := low.bit_length() - 1) < len(STATES):
            names.append(STATES[bit])
        word ^= low
    return names


def interactive(node: dict[str, Any]) -> bool:
    """Something a user can act on now: shown, and a control by its role or focusable."""
    states = node["states"]
    if "showing" not in states:
        return False
    return node["role"] in INTERACTIVE_ROLES or "focusable" in states


@dataclass(frozen=True, slots=True)
class Query:
    """What the service asks for: the window (``focused`` is the X active window's: its pid and title, which
    the service reads from X) and the filters, ``within`` in screen pixels."""

    window: str = "focused"
    max_depth: int = 30
    interactive_only: bool = False
    within: tuple[int, int, int, int] | None = None
    pid: int = 0
    title: str = ""


@dataclass(slots=True)
class Walk:
    """One tree being read: the nodes by reference, how many, what was cut."""

    query: Query
    nodes: dict[Ref, dict[str, Any]] = field(default_factory=dict)
    children: dict[Ref, list[Ref]] = field(default_factory=dict)
    capped: set[str] = field(default_factory=set)
    text_left: int = MAX_TEXT_TOTAL
    unplaced: list[Ref] = field(default_factory=list)  # nodes showing whose bounds are yet to be asked
    uncounted: list[Ref] = field(default_factory=list)  # text nodes whose length is yet to be asked
    lengths: dict[Ref, int] = field(default_factory=dict)  # the text nodes' lengths, once asked


class Atspi:
    """A connection to the AT-SPI bus, opened on first use and again after it broke (or on another loop)."""

    def __init__(self) -> None:
        self._bus: MessageBus | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._pids: dict[str, int] = {}
        # the top-level last found for the X active window (its pid and title): the next tree of that window
        # starts there, and its first level says whether it still is the active one (three round trips fewer
        # than finding it again)
        self.window: tuple[tuple[int, str], Ref] | None = None
        self._direct: dict[str, MessageBus | None] = {}  # an application's own connection (None: it has none)

    async def bus(self) -> MessageBus:
        loop = asyncio.get_running_loop()
        if self._bus is not None and self._bus.connected and self._loop is loop:
            return self._bus
        self.close()
        from dbus_fast import AuthError
        from dbus_fast.aio import MessageBus

        refused = (OSError, TimeoutError, ValueError, EOFError, AuthError)  # EOFError: hung up on in the auth
        try:
            self._bus = await asyncio.wait_for(MessageBus(bus_address=await _address()).connect(), 2)
        except (*refused, AccessibilityUnavailable) as exc:
            why = str(exc) or type(exc).__name__
            raise AccessibilityUnavailable(
                f"the accessibility (AT-SPI) bus does not answer ({why}); {_hint()}"
            ) from None
        self._loop, self._pids, self.window = loop, {}, None
        return self._bus

    async def _bus_to(self, name: str) -> MessageBus:
        """Where calls to the application ``name`` go: its direct connection, opened the first time it is
        needed, else (the registry, an application without one, or one that failed) the bus."""
        bus = await self.bus()
        if not name.startswith(":"):
            return bus
        if name not in self._direct:
            self._direct[name] = None  # asked once: the call below goes over the bus
            self._direct[name] = await self._open_direct(name)
        direct = self._direct[name]
        if direct is not None and not direct.connected:  # the application is gone: its calls fail on the bus
            self._direct[name] = direct = None
        return direct or bus

    async def _open_direct(self, name: str) -> MessageBus | None:
        from dbus_fast.errors import InvalidAddressError

        try:
            address = await self.call((name, ROOT), APPLICATION, "GetApplicationBusAddress")
            if not address:
                return None  # the bridge has none (Qt's)
            direct = wire.connect_peer(str(address), DIRECT_TIMEOUT_S)
        except (CallFailed, OSError, InvalidAddressError):
            return None  # or it does not answer: the bus serves
        # a bridge admits only its own user (and closes the connection after the greeting otherwise): asked
        # once, so that a refusal costs one call, not a tree
        (role,) = await self._batch_on(direct, [((name, ROOT), ACCESSIBLE, "GetRoleName", "", ())])
        if direct.connected and not isinstance(role, CallFailed):
            return direct
        direct.disconnect()
        return None

    def close(self) -> None:
        for direct in self._direct.values():
            if direct is not None and direct.connected:
                direct.disconnect()
        self._direct = {}
        if self._bus is not None and self._bus.connected:
            self._bus.disconnect()
        self._bus = None

    async def call(
        self, ref: Ref, interface: str, member: str, signature: str = "", body: Sequence[Any] = ()
    ) -> Any:
        """One method call's first value; ``CallFailed`` with the D-Bus error's name when it failed."""
        (answer,) = await self.batch([(ref, interface, member, signature, body)])
        if isinstance(answer, CallFailed):
            raise answer
        return answer

    async def batch(self, calls: Sequence[Call]) -> list[Any]:
        """Many calls in one burst: each answer's first value, or the ``CallFailed`` it got, in order.

        Callbacks, not a task or a coroutine per call (asyncio's own costs were most of a tree's time), at
        most ``IN_FLIGHT`` calls on the wire at once, written in waves (``wire.send_wave``): when half of them
        are answered, the next wave fills the window again. Calls all to one application go over its direct
        connection (``_bus_to``)."""
        names = {ref[0] for ref, *_ in calls}
        bus = await self._bus_to(names.pop()) if len(names) == 1 else await self.bus()
        return await self._batch_on(bus, calls)

    async def _batch_on(self, bus: MessageBus, calls: Sequence[Call]) -> list[Any]:
        answers: list[Any] = [CallFailed("timeout")] * len(calls)
        if not calls:
            return answers
        from dbus_fast import MessageType

        done = asyncio.get_running_loop().create_future()
        sent, answered_count = 0, 0

        def answered(index: int, reply: Message | None, error: Exception | None) -> None:
            nonlocal sent, answered_count
            if reply is None or reply.message_type == MessageType.ERROR:
                answers[index] = CallFailed(reply.error_name if reply is not None else str(error))
            else:
                answers[index] = reply.body[0] if reply.body else None
            answered_count += 1
            waiting = sent - answered_count
            if answered_count == len(calls):
                if not done.done():
                    done.set_result(None)
            elif sent < len(calls) and waiting <= IN_FLIGHT // 2 and not done.done():
                sent += wire.send_wave(bus, calls, sent, IN_FLIGHT - waiting, answered)

        sent = wire.send_wave(bus, calls, 0, IN_FLIGHT, answered)
        with contextlib.suppress(TimeoutError):  # a frozen application: what did not answer stays failed
            await asyncio.wait_for(done, CALL_TIMEOUT_S)
        return answers

    async def problem(self) -> str | None:
        """The /health probe: None when the registry answers, else what is wrong."""
        try:
            await self.call((REGISTRY, ROOT), ACCESSIBLE, "GetChildren")
        except AccessibilityUnavailable as exc:
            return exc.message
        except CallFailed as exc:
            return f"the AT-SPI registry does not answer: {exc}"
        return None

    async def applications(self) -> list[Ref]:
        return [tuple(ref) for ref in await self.call((REGISTRY, ROOT), ACCESSIBLE, "GetChildren")]

    async def pid(self, name: str) -> int:
        if name not in self._pids:
            try:
                self._pids[name] = int(
                    await self.call(
                        ("org.freedesktop.DBus", "/org/freedesktop/DBus"),
                        "org.freedesktop.DBus",
                        "GetConnectionUnixProcessID",
                        "s",
                        [name],
                    )
                )
            except CallFailed:
                return 0
        return self._pids[name]


class CallFailed(Exception):
    """A call AT-SPI answered with an error (the element is gone, the interface is not there ...)."""


def _hint() -> str:
    if os.geteuid() == 0:  # a bus hangs up on a user it does not admit (EOFError): the session's admit theirs
        return (
            "it runs as root (the launcher does so for a checkout the desktop user cannot read), and the "
            "session's buses admit the desktop user only"
        )
    return "is at-spi-bus-launcher running in the desktop session?"


async def _address() -> str:
    """The AT-SPI bus: ``AT_SPI_BUS_ADDRESS`` when set (libatspi reads it too), else the session bus's."""
    if os.environ.get("AT_SPI_BUS_ADDRESS"):
        return os.environ["AT_SPI_BUS_ADDRESS"]
    if not os.environ.get("DBUS_SESSION_BUS_ADDRESS"):
        raise AccessibilityUnavailable("no session bus (DBUS_SESSION_BUS_ADDRESS) to ask for it")
    from dbus_fast import BusType, Message, MessageType
    from dbus_fast.aio import MessageBus

    session = await MessageBus(bus_type=BusType.SESSION).connect()
    try:
        reply = await session.call(
            Message(
                destination="org.a11y.Bus",
                path="/org/a11y/bus",
                interface="org.a11y.Bus",
                member="GetAddress",
            )
        )
    finally:
        session.disconnect()
    if reply is None or reply.message_type == MessageType.ERROR:
        raise AccessibilityUnavailable(f"org.a11y.Bus answers {reply.error_name if reply else 'nothing'}")
    return str(reply.body[0])
