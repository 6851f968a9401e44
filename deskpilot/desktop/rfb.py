"""View-only enforced by the server: the client-to-server half of an RFB (VNC) stream, with input removed.

noVNC's "view only" is a client setting; any page that reaches the WebSocket could send input anyway. The
bridge at ``/vnc/websockify`` therefore passes a view-only connection's bytes through ``ViewOnlyFilter``,
which follows the RFB protocol (RFC 6143) message by message and forwards only what cannot change the
desktop: the handshake, pixel format and encodings, update requests, continuous updates and fences.
Key and pointer events, cut text, and every extension that carries input or power control (QEMU key
events, GII, xvp, desktop resizing) are dropped. A message this filter does not know ends the connection:
it cannot tell how long the message is, so it cannot keep the stream in step.

``ClientStream`` is the one follower of the stream: ``ViewOnlyFilter`` filters with it, and the bridge
observes an interactive connection's input with it (``human.py``) to record the human's actions.
"""

from __future__ import annotations

import struct
from collections.abc import Callable

VERSION_LENGTH = 12  # "RFB 003.008\n"
NONE, VNC_AUTH = 1, 2  # security types the filter can follow
VNC_AUTH_RESPONSE = 16


class ProtocolError(Exception):
    """The client sent something the filter cannot follow; the connection must end."""


def _fixed(n: int) -> Callable[[bytes], int | None]:
    return lambda buf: n


def _set_encodings(buf: bytes) -> int | None:
    return None if len(buf) < 4 else 4 + 4 * struct.unpack_from(">H", buf, 2)[0]


def _cut_text(buf: bytes) -> int | None:
    # the extended-clipboard form sends a negative length
    return None if len(buf) < 8 else 8 + abs(struct.unpack_from(">i", buf, 4)[0])


def _fence(buf: bytes) -> int | None:
    return None if len(buf) < 9 else 9 + buf[8]


def _set_desktop_size(buf: bytes) -> int | None:
    return None if len(buf) < 8 else 8 + 16 * buf[6]


def _gii(buf: bytes) -> int | None:
    if len(buf) < 4:
        return None
    big_endian = buf[1] & 0x80
    length: int = struct.unpack_from(">H" if big_endian else "<H", buf, 2)[0]
    return 4 + length


def _qemu(buf: bytes) -> int | None:
    if len(buf) < 2:
        return None
    if buf[1] == 0:  # extended key event
        return 12
    if buf[1] == 1:  # audio: enable/disable (4) or set format (10)
        return None if len(buf) < 4 else (10 if struct.unpack_from(">H", buf, 2)[0] == 2 else 4)
    raise ProtocolError(f"unknown QEMU client message {buf[1]}")


# message type -> (length from the buffered bytes, or None until enough arrived; forwarded in view-only)
MESSAGES: dict[int, tuple[Callable[[bytes], int | None], bool]] = {
    0: (_fixed(20), True),  # SetPixelFormat
    2: (_set_encodings, True),  # SetEncodings
    3: (_fixed(10), True),  # FramebufferUpdateRequest
    4: (_fixed(8), False),  # KeyEvent
    5: (_fixed(6), False),  # PointerEvent
    6: (_cut_text, False),  # ClientCutText
    150: (_fixed(10), True),  # EnableContinuousUpdates
    248: (_fence, True),  # ClientFence
    250: (_fixed(4), False),  # xvp: shutdown, reboot, reset
    251: (_set_desktop_size, False),  # SetDesktopSize
    253: (_gii, False),  # GII input events
    255: (_qemu, False),  # QEMU extended key events, audio
}


class ClientStream:
    """Follows the client-to-server half of an RFB stream: feed it bytes as they come, it returns them cut
    into whole pieces, each ``(chunk, is_message)``: the handshake's steps, then one message per chunk (its
    type is ``chunk[0]``). One table (``MESSAGES``) serves both uses: filtering a view-only connection and
    observing an interactive one."""

    def __init__(self) -> None:
        self._buf = b""
        self._stage = "version"
        self._pending = VERSION_LENGTH  # bytes of the current handshake stage still to pass

    def feed(self, data: bytes) -> list[tuple[bytes, bool]]:
        self._buf += data
        pieces: list[tuple[bytes, bool]] = []
        while self._buf:
            length = self._next_length()
            if length is None or len(self._buf) < length:
                break
            chunk, self._buf = self._buf[:length], self._buf[length:]
            if self._stage == "messages":
                pieces.append((chunk, True))
            else:
                pieces.append((chunk, False))
                self._advance(chunk)
        return pieces

    def _next_length(self) -> int | None:
        if self._stage != "messages":
            return self._pending
        kind = self._buf[0]
        if kind not in MESSAGES:
            raise ProtocolError(f"unknown RFB client message type {kind}")
        return MESSAGES[kind][0](self._buf)

    def _advance(self, chunk: bytes) -> None:
        """The handshake, client side: version, chosen security type (3.7+), its answer, ClientInit."""
        if self._stage == "version":
            if not chunk.startswith(b"RFB 003."):
                raise ProtocolError("not an RFB client")
            minor = int(chunk[8:11])
            # RFB 3.3: the server picks the security type and the client sends no choice (None assumed;
            # anything else desynchronises, ends in an unknown message, and closes the connection)
            self._stage, self._pending = ("security", 1) if minor >= 7 else ("init", 1)
        elif self._stage == "security":
            if chunk[0] == VNC_AUTH:
                self._stage, self._pending = "auth", VNC_AUTH_RESPONSE
            elif chunk[0] == NONE:
                self._stage, self._pending = "init", 1
            else:
                raise ProtocolError(f"security type {chunk[0]} cannot be followed")
        elif self._stage == "auth":
            self._stage, self._pending = "init", 1
        elif self._stage == "init":
            self._stage, self._pending = "messages", 0


class ViewOnlyFilter:
    """Feed it what the client sends; it returns what may go on to the VNC server."""

    def __init__(self) -> None:
        self._stream = ClientStream()
        self.dropped = 0  # input messages removed so far

    def feed(self, data: bytes) -> bytes:
        out = bytearray()
        for chunk, is_message in self._stream.feed(data):
            if not is_message or MESSAGES[chunk[0]][1]:
                out += chunk
            else:
                self.dropped += 1
        return bytes(out)


def key_event(chunk: bytes) -> tuple[bool, int]:
    """A KeyEvent message (type 4): (down, keysym)."""
    down, keysym = struct.unpack_from(">BxxI", chunk, 1)
    return bool(down), keysym


def pointer_event(chunk: bytes) -> tuple[int, int, int]:
    """A PointerEvent message (type 5): (button mask, x, y); bit n is button n + 1 (4-7: the wheel)."""
    mask, x, y = struct.unpack_from(">BHH", chunk, 1)
    return mask, x, y
