"""What dbus-fast (5.2, as pinned) does not do for the AT-SPI client (atspi.py), done with its own parts:
many calls written in one system call, and a connection to a peer rather than to a bus daemon."""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # imported where the bus is spoken to: the service never is
    from dbus_fast import Message
    from dbus_fast.aio import MessageBus

# an element (its application's bus name, its path), interface, method, signature, arguments
Call = tuple[tuple[str, str], str, str, str, Sequence[Any]]


def connect_peer(address: str, timeout: float) -> MessageBus:
    """A peer-to-peer connection to an application's own D-Bus server. Not dbus-fast's ``connect``: that
    says ``Hello`` to a bus daemon, which a peer does not answer. The socket is local and the handshake two
    lines, so it is done here, blocking for at most ``timeout`` seconds (uvloop's socket helpers on a
    descriptor then watched by a reader made the first write fail); then dbus-fast 5.2 (as pinned) reads and
    writes it as it does its own connections."""
    from dbus_fast.aio import MessageBus
    from dbus_fast.aio.message_bus import _MessageWriter
    from dbus_fast.aio.message_reader import build_message_reader

    bus = MessageBus(bus_address=address)
    transport, options = bus._bus_address[0]
    sock, stream, target = bus._create_socket_for_transport(transport, options)
    try:
        sock.settimeout(timeout)
        sock.connect(target)
        sock.sendall(b"\0AUTH EXTERNAL " + str(os.getuid()).encode().hex().encode() + b"\r\n")
        answer = sock.recv(512)
        if not answer.startswith(b"OK "):
            raise OSError(f"the application refused the connection: {answer[:80]!r}")
        sock.sendall(b"BEGIN\r\n")
        sock.setblocking(False)
    except BaseException:
        stream.close()
        sock.close()
        raise
    bus._sock, bus._stream, bus._fd = sock, stream, sock.fileno()
    bus._writer = _MessageWriter(bus)
    reader = build_message_reader(bus._sock, bus._process_message, bus._finalize, bus._negotiate_unix_fd)
    bus._loop.add_reader(bus._fd, reader)
    bus.unique_name = ":peer"  # a peer has no bus to name it; nothing here reads it
    return bus


def send_wave(
    bus: MessageBus,
    calls: Sequence[Call],
    first: int,
    room: int,
    answered: Callable[[int, Message | None, Exception | None], None],
) -> int:
    """Calls ``first`` on (at most ``room`` of them) in one write, each answer to ``answered(index, ...)``;
    how many. dbus-fast's ``_call`` writes each message as it comes, a system call each (a third of a
    terminal's tree); here its reply table and its writer's queue are filled as ``_call`` fills them."""
    from dbus_fast import Message

    writer, loop = bus._writer, bus._loop
    assert writer is not None and loop is not None and isinstance(writer.fd, int)  # a connected bus's
    last = min(len(calls), first + room)
    wave = bytearray()
    for index in range(first, last):
        ref, interface, member, signature, body = calls[index]
        message = Message(
            destination=ref[0], path=ref[1], interface=interface, member=member, signature=signature,
            body=list(body), serial=bus.next_serial(),
        )  # fmt: skip
        bus._method_return_handlers[message.serial] = functools.partial(answered, index)
        wave += message._marshall(False)
    idle = writer.buf is None and not writer.messages
    writer.messages.append((wave, None, None))
    if idle:
        writer.write_callback(remove_writer=False)
    # a write that failed has closed the connection (its calls failed): no writer to wait on a closed socket
    if bus.connected and (writer.buf is not None or writer.messages):
        loop.add_writer(writer.fd, writer.write_callback)
    return last - first
