"""Each application's calls go over its own connection where its bridge offers one (atspi.py): the same tree
as over the bus, and the bus again when the application refuses this process (another user) or is gone."""

from __future__ import annotations

import asyncio
import os
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from deskpilot.desktop import dbus_wire
from deskpilot.desktop.accessibility import read_tree
from deskpilot.desktop.atspi import Atspi, Query
from testbed.atspi import accessibility_bus
from testbed.timing import wait_until
from testbed.xvfb import Display, managed_display


@pytest.fixture(scope="module")
def terminal() -> Iterator[tuple[Display, int]]:
    """xfce4-terminal on a private display with its AT-SPI bus, run as this process's user (as the worker
    runs as the desktop user's)."""
    with managed_display() as display, accessibility_bus(display):
        home = Path(tempfile.mkdtemp(prefix="deskpilot-direct-"))
        display.scratch.append(home)
        proc = display.spawn(
            ["xfce4-terminal", "--disable-server"], env={"GNOME_ACCESSIBILITY": "1", "HOME": str(home)}
        )
        wait_until(lambda: _read(proc.pid)["root"] is not None, 60, what="its tree")
        # a terminal just started still lays out its rows (its text grows by empty lines): compared once still
        wait_until(lambda: _still(proc.pid), 30, interval=0.2, what="its tree to stay the same")
        yield display, proc.pid


def _still(pid: int) -> bool:
    first = _shape(_read(pid)["root"])
    time.sleep(0.3)
    return first == _shape(_read(pid)["root"])


def _read(pid: int) -> dict[str, Any]:
    """A tree read by a reader of its own, closed after."""

    async def read() -> dict[str, Any]:
        reader = Atspi()
        try:
            return await _tree(reader, pid)
        finally:
            reader.close()

    return asyncio.run(read())


async def _tree(atspi: Atspi, pid: int) -> dict[str, Any]:
    return await read_tree(atspi, Query(pid=pid, max_depth=30))


def _shape(node: dict[str, Any] | None) -> Any:
    """A tree without what changes from one reading to the next (nothing, on a still terminal, but ids)."""
    if node is None:
        return None
    return (node["role"], node["name"], sorted(node["states"]), node.get("text"), node["bounds"],
            [_shape(child) for child in node["children"]])  # fmt: skip


def test_the_direct_connection_reads_the_same_tree_as_the_bus(terminal: tuple[Display, int]) -> None:
    _, pid = terminal

    async def both() -> tuple[dict[str, Any], dict[str, Any], Atspi]:
        direct = Atspi()
        over_direct = await _tree(direct, pid)
        bus = Atspi()
        bus._direct = _Nowhere()  # every application "has none": all calls over the bus
        over_bus = await _tree(bus, pid)
        bus.close()
        return over_direct, over_bus, direct

    over_direct, over_bus, atspi = asyncio.run(both())
    connections = [c for c in atspi._direct.values() if c is not None]
    assert len(connections) == 1  # the terminal's, the one application asked
    assert over_direct["nodes"] == over_bus["nodes"] > 10
    assert _shape(over_direct["root"]) == _shape(over_bus["root"])
    atspi.close()


def test_an_application_that_refuses_is_read_over_the_bus(
    terminal: tuple[Display, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    _, pid = terminal
    # another user greets the bridge (the bus is greeted as before): it closes the connection after the
    # handshake
    monkeypatch.setattr(dbus_wire, "os", SimpleNamespace(getuid=lambda: os.getuid() + 4242))

    async def read() -> tuple[dict[str, Any], Atspi]:
        reader = Atspi()
        return await _tree(reader, pid), reader

    tree, reader = asyncio.run(read())
    assert tree["nodes"] > 10 and reader._direct and all(c is None for c in reader._direct.values())
    reader.close()


class _Nowhere(dict[str, Any]):
    """A table of direct connections in which every application has none."""

    def __contains__(self, name: object) -> bool:
        return True

    def __getitem__(self, name: str) -> None:
        return None
