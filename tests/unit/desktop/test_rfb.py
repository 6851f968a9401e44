"""The view-only filter follows the client's RFB stream byte for byte and removes every input message."""

from __future__ import annotations

import struct

import pytest

from deskpilot.desktop.rfb import ProtocolError, ViewOnlyFilter

HANDSHAKE = b"RFB 003.008\n" + bytes([1]) + bytes([1])  # version, security None, ClientInit shared
PIXEL_FORMAT = bytes([0, 0, 0, 0]) + bytes(16)
ENCODINGS = struct.pack(">BxH", 2, 3) + struct.pack(">iii", 0, 1, -223)
UPDATE = struct.pack(">BBHHHH", 3, 1, 0, 0, 1920, 1080)
KEY = struct.pack(">BBxxI", 4, 1, 0x61)
POINTER = struct.pack(">BBHH", 5, 1, 100, 200)
CUT = struct.pack(">BxxxI", 6, 5) + b"hello"
EXTENDED_CUT = struct.pack(">Bxxxi", 6, -8) + bytes(8)
FENCE = struct.pack(">BxxxIB", 248, 0, 3) + b"abc"
QEMU_KEY = struct.pack(">BBHII", 255, 0, 1, 0x61, 30)
SET_SIZE = struct.pack(">BxHHBx", 251, 1920, 1080, 1) + bytes(16)


def test_view_only_keeps_the_view_and_drops_the_input() -> None:
    f = ViewOnlyFilter()
    stream = HANDSHAKE + PIXEL_FORMAT + ENCODINGS + UPDATE + KEY + POINTER + CUT + EXTENDED_CUT
    stream += FENCE + QEMU_KEY + SET_SIZE + UPDATE
    assert f.feed(stream) == HANDSHAKE + PIXEL_FORMAT + ENCODINGS + UPDATE + FENCE + UPDATE
    assert f.dropped == 6


def test_messages_split_across_frames_stay_in_step() -> None:
    f = ViewOnlyFilter()
    stream = HANDSHAKE + ENCODINGS + POINTER + UPDATE + KEY + UPDATE
    out = b"".join(f.feed(stream[i : i + 1]) for i in range(len(stream)))  # one byte at a time
    assert out == HANDSHAKE + ENCODINGS + UPDATE + UPDATE


def test_vnc_authentication_passes_and_rfb_33_skips_the_choice() -> None:
    f = ViewOnlyFilter()
    auth = b"RFB 003.008\n" + bytes([2]) + bytes(16) + bytes([1])
    assert f.feed(auth + POINTER + UPDATE) == auth + UPDATE
    old = ViewOnlyFilter()
    assert old.feed(b"RFB 003.003\n" + bytes([1]) + KEY + UPDATE) == b"RFB 003.003\n" + bytes([1]) + UPDATE


@pytest.mark.parametrize(
    "stream",
    [b"GET / HTTP/1.1\r\n", HANDSHAKE + bytes([99, 0, 0, 0]), b"RFB 003.008\n" + bytes([19])],
    ids=["not-rfb", "unknown-message", "unknown-security"],
)
def test_anything_it_cannot_follow_ends_the_connection(stream: bytes) -> None:
    with pytest.raises(ProtocolError):
        ViewOnlyFilter().feed(stream)
