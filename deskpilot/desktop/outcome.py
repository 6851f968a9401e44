"""What a desktop action produced, and how HTTP renders it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import orjson
import pybase64

from deskpilot.desktop.capture import Image
from deskpilot.desktop.files import FileContent


@dataclass(frozen=True, slots=True)
class Outcome:
    """What an action produced. HTTP renders it with ``to_json``; MCP and the action channel can use
    ``image.data`` directly."""

    message: str | None = None
    image: Image | None = None
    position: tuple[int, int] | None = None
    file: FileContent | None = None
    settled_ms: float | None = None  # how long the action's settle waited (asked for with ``settle``)
    settled: bool | None = None  # False when it stopped at its maxMs with the screen still changing
    drawn: bool | None = None  # False when nothing was drawn after the action within its expectation window
    evidence: dict[str, Any] | None = None  # what an input action did, when asked (``evidence.py``)
    data: dict[str, Any] | None = None  # an answer of its own (the accessibility tree), as it is

    def to_dict(self, image_apart: bool = False) -> dict[str, Any]:
        """The answer's body; with ``image_apart``, ``data.image`` is left out for ``data.imageBytes`` (its
        length): the action channel sends those bytes as a binary frame of their own (``channel.py``)."""
        body: dict[str, Any] = {"success": True}
        if self.image is not None:
            data: dict[str, Any] = (
                {"imageBytes": len(self.image.data)}
                if image_apart
                else {"image": pybase64.b64encode_as_string(self.image.data)}
            )
            if self.image.media_type != "image/png":
                data["mediaType"] = self.image.media_type
            if self.image.scaled:  # how to map a point of the image back onto the screen
                data.update(geometry(self.image))
            body["data"] = data
        elif self.position is not None:
            body["data"] = {"x": self.position[0], "y": self.position[1]}
        elif self.data is not None:
            body["data"] = self.data
        elif self.file is not None:
            body["data"] = pybase64.b64encode_as_string(self.file.data)
            body.update(name=self.file.name, size=self.file.size, mediaType=self.file.media_type)
        if self.message is not None:
            body["message"] = self.message
        body.update(self.observed())
        return body

    def observed(self) -> dict[str, Any]:
        """What an input action asked to know besides its image: how long it settled, what it did."""
        out: dict[str, Any] = {}
        if self.settled_ms is not None:
            out.update(settledMs=round(self.settled_ms, 1), settled=self.settled, drawn=self.drawn)
        if self.evidence is not None:
            out["evidence"] = self.evidence
        return out

    def to_json(self) -> bytes:
        """The response body of ``POST /computer-use`` (pybase64 + orjson: ~0.1 ms for a 1 MB PNG)."""
        return orjson.dumps(self.to_dict())


def geometry(image: Image) -> dict[str, Any]:
    """Where a scaled or cropped screenshot lies: its ``size``, the ``screen``'s, the ``region`` it shows
    (the whole screen unless one was asked for) and the ``scale`` (image pixels per screen pixel). A
    client maps an image point back as ``region.x + ix / scale``, or sends it with ``space``
    (docs/desktop-api.md)."""
    sw, sh = image.screen or (image.width, image.height)
    x, y, w, h = image.region or (0, 0, sw, sh)
    out: dict[str, Any] = {
        "size": {"width": image.width, "height": image.height},
        "screen": {"width": sw, "height": sh},
        "scale": round(image.width / w, 6),
    }
    if image.region is not None:
        out["region"] = {"x": x, "y": y, "width": w, "height": h}
    return out
