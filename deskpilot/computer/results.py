"""What the desktop client's methods take and give back besides the wire's JSON: points, screenshots as
bytes with their size, files as bytes with their name and type.

The typed methods (``client_actions.py``) call the converters below by name; each result function turns
the body of a successful ``POST /computer-use`` into what the method returns.
"""

from __future__ import annotations

import io
import struct
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

import pybase64
from pydantic import BaseModel

from deskpilot.computer.fields import Coordinates

if TYPE_CHECKING:
    from PIL import Image

# A point as a caller writes it: (x, y), {"x": ..., "y": ...} or the contract's Coordinates.
PointLike = tuple[float, float] | Mapping[str, float] | Coordinates


class Point(NamedTuple):
    x: int
    y: int


def as_options(value: BaseModel | Mapping[str, Any] | None) -> dict[str, Any] | None:
    """Options (``Settle``, ``ScreenshotOptions``) as the model or a dict of its fields."""
    if isinstance(value, BaseModel):
        return value.model_dump(exclude_none=True)
    return None if value is None else dict(value)


def as_point(value: PointLike | None) -> dict[str, Any] | None:
    if value is None:
        return None
    if isinstance(value, Coordinates):
        return {"x": value.x, "y": value.y}
    if isinstance(value, Mapping):
        return dict(value)
    x, y = value
    return {"x": x, "y": y}


def as_points(values: Sequence[PointLike]) -> list[dict[str, Any] | None]:
    return [as_point(v) for v in values]


def as_keys(values: Sequence[str] | None) -> list[str] | None:
    return None if values is None else list(values)


def as_base64(data: bytes | str) -> str:
    """A file's content for write_file: bytes as they are, text as UTF-8."""
    return pybase64.b64encode_as_string(data.encode() if isinstance(data, str) else data)


# ------------------------------------------------------------------------------------------------ results


class ScreenImage(bytes):
    """The encoded image (PNG unless asked otherwise), with its ``width``, ``height`` and ``media_type``."""

    width: int
    height: int
    media_type: str

    def __new__(cls, data: bytes, media_type: str = "image/png") -> ScreenImage:
        shot = super().__new__(cls, data)
        shot.media_type = media_type
        shot.width, shot.height = image_size(data)
        return shot

    @property
    def size(self) -> tuple[int, int]:
        return self.width, self.height

    def image(self) -> Image.Image:
        """The screenshot as a ``PIL.Image`` (needs Pillow: ``pip install "deskpilot[client]"``)."""
        try:
            from PIL import Image
        except ImportError as exc:
            raise ImportError('ScreenImage.image() needs Pillow: pip install "deskpilot[client]"') from exc
        return Image.open(io.BytesIO(self))


class FileData(bytes):
    """A file read from the desktop: its bytes, its ``name`` and ``media_type``; ``text`` decodes UTF-8."""

    name: str
    media_type: str

    def __new__(cls, data: bytes, name: str = "", media_type: str = "") -> FileData:
        file = super().__new__(cls, data)
        file.name, file.media_type = name, media_type
        return file

    @property
    def text(self) -> str:
        return self.decode("utf-8")


def no_result(body: dict[str, Any]) -> None:
    return None


def message_of(body: dict[str, Any]) -> str:
    return str(body.get("message") or "")


def screenshot_of(body: dict[str, Any]) -> ScreenImage:
    data = body["data"]
    image = data["image"]  # bytes when it came over the action channel
    raw = image if isinstance(image, bytes) else pybase64.b64decode(image)
    return ScreenImage(raw, str(data.get("mediaType") or "image/png"))


def data_of(body: dict[str, Any]) -> dict[str, Any]:
    """The answer's ``data`` as it is (the accessibility tree: ``root``, ``nodes``, ``capped``)."""
    data: dict[str, Any] = body["data"]
    return data


def point_of(body: dict[str, Any]) -> Point:
    return Point(int(body["data"]["x"]), int(body["data"]["y"]))


def file_of(body: dict[str, Any]) -> FileData:
    data = pybase64.b64decode(body.get("data") or "")
    return FileData(data, str(body.get("name") or ""), str(body.get("mediaType") or ""))


# -------------------------------------------------------------------------------------------- image size


def image_size(data: bytes) -> tuple[int, int]:
    """(width, height) from a PNG, JPEG or WebP header; (0, 0) for anything else."""
    if data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) >= 24:
        width, height = struct.unpack(">II", data[16:24])
        return int(width), int(height)
    if data[:2] == b"\xff\xd8":
        return _jpeg_size(data)
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return _webp_size(data)
    return 0, 0


def _jpeg_size(data: bytes) -> tuple[int, int]:
    i = 2
    while i + 9 <= len(data):
        if data[i] != 0xFF:
            return 0, 0
        marker, length = data[i + 1], struct.unpack(">H", data[i + 2 : i + 4])[0]
        if marker in (0xC0, 0xC1, 0xC2, 0xC3, 0xC5, 0xC6, 0xC7, 0xC9, 0xCA, 0xCB, 0xCD, 0xCE, 0xCF):
            height, width = struct.unpack(">HH", data[i + 5 : i + 9])
            return int(width), int(height)
        i += 2 + length
    return 0, 0


def _webp_size(data: bytes) -> tuple[int, int]:
    chunk = data[12:16]
    if chunk == b"VP8 " and len(data) >= 30:
        width, height = struct.unpack("<HH", data[26:30])
        return width & 0x3FFF, height & 0x3FFF
    if chunk == b"VP8L" and len(data) >= 25:
        bits = int.from_bytes(data[21:25], "little")
        return (bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1
    if chunk == b"VP8X" and len(data) >= 30:
        return int.from_bytes(data[24:27], "little") + 1, int.from_bytes(data[27:30], "little") + 1
    return 0, 0
