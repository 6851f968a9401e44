"""The values the actions are made of: limits, names, numbers that must be JSON numbers, key names, points
on the screen, and the screenshot and settling options several actions share."""

from __future__ import annotations

import re
import unicodedata
from typing import Annotated, Any, Literal, Self, get_args

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationError,
    model_validator,
)

from deskpilot.computer import keys
from deskpilot.computer.geometry import SCREEN, Size, image_size, to_model, to_screen

SCREEN_WIDTH, SCREEN_HEIGHT = SCREEN.width, SCREEN.height
MAX_CLICKS, MAX_SCROLLS, MAX_WAIT_MS, MAX_TEXT = 10, 100, 300_000, 100_000
MAX_KEYS, MAX_PATH_POINTS = 100, 10_000

# back and forward (X buttons 8 and 9) are our extension of the spec's three buttons
Button = Literal["left", "right", "middle", "back", "forward"]
Press = Literal["up", "down"]
ScrollDirection = Literal["up", "down", "left", "right"]
ImageFormat = Literal["png", "jpeg", "webp"]
# The application names, here alone: the desktop's table of programs (deskpilot/desktop/apps.py), the agent's
# tools and prompt, the launchers of rootfs/ and the docs follow it (tests compare them)
ApplicationName = Literal[
    "terminal", "browser", "code_editor", "directory", "email_client", "password_manager", "desktop"
]
APPLICATION_NAMES: tuple[str, ...] = get_args(ApplicationName)
# Where the file actions' relative paths and a task's uploaded files land: the desktop user's Desktop
DESKTOP_DIR = "/home/user/Desktop"
AccessibilityWindow = Literal["focused", "all"]
FILE_ACTIONS = frozenset({"write_file", "read_file"})

# The bidirectional controls: embeddings and overrides (U+202A-U+202E), isolates (U+2066-U+2069), the marks
# (U+200E, U+200F, U+061C). In a name they make it display other than it is (``invoice\u202etxt.exe`` shows
# as "invoiceexe.txt"); no file name needs one, so every name and path that comes in is refused with one.
BIDI_CONTROLS = re.compile("[\u202a-\u202e\u2066-\u2069\u200e\u200f\u061c]")


def bidi_problem(text: str) -> str | None:
    """What is wrong with a name or path holding a bidirectional control character, naming the first one
    ("U+202E RIGHT-TO-LEFT OVERRIDE"), and the fix; None when it holds none. Both services ask it of every
    name and path they take in (the file actions' paths, over HTTP and MCP; the names of uploads)."""
    found = BIDI_CONTROLS.search(text)
    if found is None:
        return None
    char = found.group()
    return (
        f"contains the bidirectional control character U+{ord(char):04X} {unicodedata.name(char)}, which "
        "makes a name display other than it is; remove it"
    )


def _check_path(path: str) -> str:
    if "\x00" in path:
        raise ValueError("path contains a NUL character")
    problem = bidi_problem(path)
    if problem is not None:
        raise ValueError(f"path {problem}")
    return path


# a file action's path
FilePath = Annotated[
    str,
    Field(min_length=1, max_length=4096, description="~/Desktop-relative or absolute"),
    AfterValidator(_check_path),
]


def _check_key(name: str) -> str:
    keys.resolve(name)  # raises ValueError with a suggestion
    return name


def _json_number(value: Any) -> Any:
    """Numbers only: pydantic's lax mode would take ``true`` as 1 and ``"5"`` as 5 (an integral float such
    as 2.0 stays an integer, as JSON Schema has it; a float field takes integers)."""
    if isinstance(value, bool):
        raise ValueError(f"must be a number, not {str(value).lower()}")
    if isinstance(value, str):
        raise ValueError("must be a number, not a string")
    return value


JSONNumber = BeforeValidator(_json_number)


KeyName = Annotated[
    str,
    Field(min_length=1, max_length=64, description="ctrl, shift, alt, super, enter, esc, f5, a, Page_Up ..."),
    AfterValidator(_check_key),
]
KeyList = Annotated[list[KeyName], Field(min_length=1, max_length=MAX_KEYS)]
HoldKeys = Annotated[list[KeyName], Field(max_length=MAX_KEYS, description="keys held during the action")]
Delay = Annotated[
    int, JSONNumber, Field(ge=0, le=MAX_WAIT_MS, description="milliseconds between key presses")
]


class Coordinates(BaseModel):
    model_config = ConfigDict(extra="ignore")

    x: Annotated[float, JSONNumber] = Field(
        ge=0, lt=SCREEN_WIDTH, allow_inf_nan=False, description=f"0..{SCREEN_WIDTH - 1}, pixels from the left"
    )
    y: Annotated[float, JSONNumber] = Field(
        ge=0,
        lt=SCREEN_HEIGHT,
        allow_inf_nan=False,
        description=f"0..{SCREEN_HEIGHT - 1}, pixels from the top",
    )

    @property
    def xy(self) -> tuple[int, int]:
        return min(round(self.x), SCREEN_WIDTH - 1), min(round(self.y), SCREEN_HEIGHT - 1)


Path = Annotated[list[Coordinates], Field(min_length=1, max_length=MAX_PATH_POINTS)]
ElementId = Annotated[
    str,
    Field(
        pattern=r"^\d+\.\d+/[A-Za-z0-9_/]{1,200}$",
        description="an element's id, as accessibility answers it ('1.42/117')",
    ),
]


class Region(BaseModel):
    """A rectangle of the screen, in screen pixels."""

    model_config = ConfigDict(extra="forbid")

    x: Annotated[int, JSONNumber] = Field(ge=0, lt=SCREEN_WIDTH)
    y: Annotated[int, JSONNumber] = Field(ge=0, lt=SCREEN_HEIGHT)
    width: Annotated[int, JSONNumber] = Field(ge=16, le=SCREEN_WIDTH)
    height: Annotated[int, JSONNumber] = Field(ge=16, le=SCREEN_HEIGHT)

    @model_validator(mode="after")
    def _on_screen(self) -> Self:
        if self.x + self.width > SCREEN_WIDTH or self.y + self.height > SCREEN_HEIGHT:
            raise ValueError(f"the region must lie on the {SCREEN_WIDTH}x{SCREEN_HEIGHT} screen")
        return self

    @property
    def box(self) -> tuple[int, int, int, int]:
        return self.x, self.y, self.width, self.height


class ImageSpace(BaseModel):
    """The image a client read its coordinates from: a screenshot ``width`` pixels wide, of the whole screen
    or of ``region`` (as its answer said: ``data.size.width`` and ``data.region``)."""

    model_config = ConfigDict(extra="forbid")

    width: Annotated[int, JSONNumber] = Field(ge=16, le=SCREEN_WIDTH, description="the image's width")
    region: Region | None = Field(default=None, description="the region of the screen the image shows")

    @property
    def size(self) -> Size:
        area = Size(self.region.width, self.region.height) if self.region else SCREEN
        return image_size(area, self.width, None, zoom=self.region is not None)

    def to_screen(self, x: float, y: float) -> tuple[int, int]:
        """A point of the image → the screen pixel it shows; ValueError off the image."""
        size = self.size
        if not (0 <= x < size.width and 0 <= y < size.height):
            raise ValueError(f"({x:g}, {y:g}) is not on the {size} image 'space' describes")
        if self.region is None:
            return to_screen(x, y, size)
        area = Size(self.region.width, self.region.height)
        return to_screen(x, y, size, area, origin=(self.region.x, self.region.y))

    def region_to_screen(self, box: Region) -> Region:
        """A rectangle of the image → the screen pixels it shows."""
        x0, y0 = self.to_screen(box.x, box.y)
        x1, y1 = self.to_screen(box.x + box.width - 1, box.y + box.height - 1)
        return Region.model_construct(x=x0, y=y0, width=x1 - x0 + 1, height=y1 - y0 + 1)

    def to_image(self, x: float, y: float) -> tuple[int, int]:
        """A screen pixel → the pixel of the image that shows it (clamped onto the image)."""
        if self.region is None:
            return to_model(x, y, self.size)
        area = Size(self.region.width, self.region.height)
        return to_model(x - self.region.x, y - self.region.y, self.size, area)


def points_into_screen(data: Any) -> Any:
    """A request's ``coordinates`` and ``path`` given in an image's pixels (``space``) → screen pixels, each
    checked on that image; the validated action then holds screen pixels only, whoever sent it (HTTP, MCP,
    the agent). Anything that is not a point is left for the fields' own validation to reject."""
    if not isinstance(data, dict) or not isinstance(data.get("space"), dict):
        return data
    try:
        space = ImageSpace.model_validate(data["space"])
    except ValidationError:
        return data  # the field's own validation says what is wrong, and where

    def point(value: Any) -> Any:
        if not isinstance(value, dict) or not all(
            isinstance(value.get(k), int | float) and not isinstance(value.get(k), bool) for k in ("x", "y")
        ):
            return value
        x, y = space.to_screen(value["x"], value["y"])
        return {**value, "x": x, "y": y}

    out = {**data, "space": None}
    if "coordinates" in out:
        out["coordinates"] = point(out["coordinates"])
    if isinstance(out.get("path"), list):
        out["path"] = [point(v) for v in out["path"]]
    return out


def _screen_is_the_default(value: Any) -> Any:
    return None if value == "screen" else value


Space = Annotated[
    ImageSpace | None,
    BeforeValidator(_screen_is_the_default),
    Field(
        description='the coordinates\' pixels: "screen" (default) or the image they were read from, '
        '{"width": 1366} or {"width": 960, "region": {...}} as a screenshot\'s answer describes it',
    ),
]


class ScreenshotOptions(BaseModel):
    """How a screenshot is taken: format, quality, a region, a size, PNG compression."""

    model_config = ConfigDict(extra="forbid")

    format: ImageFormat = Field(default="png", description="image format (default png)")
    quality: Annotated[int, JSONNumber] = Field(
        default=80, ge=1, le=100, description="jpeg/webp quality; ignored for png"
    )
    width: Annotated[int | None, JSONNumber] = Field(
        default=None,
        ge=16,
        le=SCREEN_WIDTH,
        description="downscale to this width; with a region, zoom: its width in the image, up or down",
    )
    scale: Annotated[float | None, JSONNumber] = Field(
        default=None, gt=0, le=1, description="downscale by this factor"
    )
    region: Region | None = Field(default=None, description="only this rectangle of the screen")
    compression: Annotated[int | None, JSONNumber] = Field(
        default=None, ge=0, le=9, description="png only: a zlib level for a smaller file (default: fast)"
    )

    @model_validator(mode="after")
    def _one_size(self) -> Self:
        if self.width is not None and self.scale is not None:
            raise ValueError("give either 'width' or 'scale', not both")
        if self.compression is not None and self.format != "png":
            raise ValueError("'compression' is for png; jpeg and webp take 'quality'")
        return self


class Settle(BaseModel):
    """Wait after the action for what it makes the screen draw (at most ``expectMs`` for the first drawing),
    then until nothing was drawn for ``quietMs``, at most ``maxMs`` in all. Left out, ``expectMs`` and
    ``quietMs`` take the action's defaults (docs/desktop-api.md)."""

    model_config = ConfigDict(extra="forbid")

    quietMs: Annotated[int | None, JSONNumber] = Field(
        default=None, ge=1, le=5000, description="at rest once nothing was drawn this long (by action)"
    )
    expectMs: Annotated[int | None, JSONNumber] = Field(
        default=None, ge=0, le=MAX_WAIT_MS, description="how long the first drawing is waited for (by action)"
    )
    maxMs: Annotated[int, JSONNumber] = Field(default=2000, ge=0, le=MAX_WAIT_MS)
