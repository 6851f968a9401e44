"""The request shapes of ``POST /computer-use``: one pydantic model per action, a union on ``action``.

``parse_action`` validates a whole request (bounds, key names, coordinates on screen) before anything
touches the display, and turns every failure into one readable ``InvalidAction`` message that says what
is wrong and how to fix it, including the look-alike fields clients are known to send.
"""

from __future__ import annotations

import difflib
from typing import Annotated, Any, Literal, get_args

import orjson
from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    StrictBool,
    TypeAdapter,
    ValidationError,
    model_validator,
)

from deskpilot.computer import keys
from deskpilot.computer.fields import (
    FILE_ACTIONS,
    MAX_CLICKS,
    MAX_SCROLLS,
    MAX_TEXT,
    MAX_WAIT_MS,
    AccessibilityWindow,
    ApplicationName,
    Button,
    Coordinates,
    Delay,
    ElementId,
    FilePath,
    HoldKeys,
    JSONNumber,
    KeyList,
    Path,
    Press,
    Region,
    ScreenshotOptions,
    ScrollDirection,
    Settle,
    Space,
    points_into_screen,
)
from deskpilot.errors import InvalidAction


class _Action(BaseModel):
    model_config = ConfigDict(extra="ignore")


class Looks(_Action):
    """An action after which a client looks at the screen: optionally followed by settling and a screenshot
    in the same request (an extension of ours: without these fields the answer is the spec's)."""

    settle: Settle | None = Field(default=None, description="wait for the screen to settle afterwards")
    screenshot: ScreenshotOptions | None = Field(
        default=None, description="answer with a screenshot taken afterwards (after settling, if asked)"
    )


class Observed(Looks):
    """An input action: it may also ask for evidence of what it did, and give its points in an image's
    ``space``."""

    evidence: StrictBool = Field(
        default=False,
        description="answer with what the action did: pointer, focus before/after, screen changed",
    )
    space: Space = None  # input only: a validated action holds screen pixels

    @model_validator(mode="before")
    @classmethod
    def _into_screen(cls, data: Any) -> Any:
        return points_into_screen(data)


class MoveMouse(Observed):
    """Move the pointer to ``coordinates``."""

    action: Literal["move_mouse"]
    coordinates: Coordinates


class TraceMouse(Observed):
    """Move the pointer through every point of ``path`` in order, with ``holdKeys`` held."""

    action: Literal["trace_mouse"]
    path: Path
    holdKeys: HoldKeys | None = None


class ClickMouse(Observed):
    """Click ``clickCount`` times (2 = double, 3 = triple click) at ``coordinates``, at the centre of an
    accessibility ``element``, or where the pointer is."""

    action: Literal["click_mouse"]
    coordinates: Coordinates | None = None
    element: ElementId | None = None
    button: Button
    clickCount: Annotated[int, JSONNumber] = Field(ge=1, le=MAX_CLICKS)
    holdKeys: HoldKeys | None = None

    @model_validator(mode="after")
    def _one_target(self) -> ClickMouse:
        if self.element is not None and self.coordinates is not None:
            raise ValueError("give either 'coordinates' or 'element', not both")
        return self


class PressMouse(Observed):
    """Press or release a mouse button at ``coordinates`` or where the pointer is."""

    action: Literal["press_mouse"]
    coordinates: Coordinates | None = None
    button: Button
    press: Press


class DragMouse(Observed):
    """Press ``button`` at the first point of ``path``, move through the rest, release at the last."""

    action: Literal["drag_mouse"]
    path: Path
    button: Button
    holdKeys: HoldKeys | None = None


class Scroll(Observed):
    """Scroll ``scrollCount`` steps (X buttons 4-7) at ``coordinates`` or where the pointer is."""

    action: Literal["scroll"]
    coordinates: Coordinates | None = None
    direction: ScrollDirection
    scrollCount: Annotated[int, JSONNumber] = Field(ge=1, le=MAX_SCROLLS)
    holdKeys: HoldKeys | None = None


class TypeKeys(Observed):
    """Press and release each key in sequence, ``delay`` ms apart (a chord is ``press_keys`` down then up)."""

    action: Literal["type_keys"]
    keys: KeyList
    delay: Delay | None = None

    @model_validator(mode="after")
    def _bounded(self) -> TypeKeys:
        _check_duration(len(self.keys), self.delay)
        return self


class PressKeys(Observed):
    """Hold keys down (in order) or release them (in reverse order)."""

    action: Literal["press_keys"]
    keys: KeyList
    press: Press


def _check_text(text: str) -> str:
    bad = next((c for c in text if not keys.is_typeable(c)), None)
    if bad is not None:
        raise ValueError(f"text contains the control character U+{ord(bad):04X}, which cannot be typed")
    return text


Text = Annotated[str, Field(max_length=MAX_TEXT), AfterValidator(_check_text)]


class TypeText(Observed):
    """Type any Unicode text independent of the keyboard layout; ``\\n`` is Return and ``\\t`` is Tab. With
    ``element`` (an accessibility id), into that element, focused first."""

    action: Literal["type_text"]
    text: Text
    element: ElementId | None = None
    delay: Delay | None = None

    @model_validator(mode="after")
    def _bounded(self) -> TypeText:
        _check_duration(len(self.text), self.delay)
        return self


class PasteText(Observed):
    """Put ``text`` on the clipboard and paste it (ctrl+v, or ctrl+shift+v in a terminal)."""

    action: Literal["paste_text"]
    text: Annotated[str, Field(max_length=MAX_TEXT)]


class Wait(Looks):
    """Wait ``duration`` milliseconds."""

    action: Literal["wait"]
    duration: Annotated[int, JSONNumber] = Field(ge=0, le=MAX_WAIT_MS)


class Screenshot(ScreenshotOptions, _Action):
    """Capture the screen. Without options: the whole screen at full size as a lossless PNG."""

    model_config = ConfigDict(extra="ignore")

    action: Literal["screenshot"]


class CursorPosition(_Action):
    """Report the pointer position."""

    action: Literal["cursor_position"]


class Application(Observed):
    """Bring an application to the front (launching it if needed); ``desktop`` shows the desktop."""

    action: Literal["application"]
    application: ApplicationName


class Accessibility(_Action):
    """The accessibility (AT-SPI) tree of the focused window, or of every window: each element's role, name,
    states, bounds and (text roles) text, with an ``id`` that click_mouse and type_text take as ``element``.
    ``interactiveOnly`` keeps the controls shown now; ``within`` the elements that overlap a rectangle."""

    action: Literal["accessibility"]
    window: AccessibilityWindow = Field(default="focused", description="the focused window, or all")
    maxDepth: Annotated[int, JSONNumber] = Field(default=30, ge=1, le=100, description="levels read, 1-100")
    interactiveOnly: StrictBool = Field(default=False, description="only the controls shown now")
    within: Region | None = Field(default=None, description="only the elements overlapping this rectangle")
    space: Space = Field(default=None, description="the pixels of bounds and within (default: the screen)")

    @model_validator(mode="after")
    def _within_on_screen(self) -> Accessibility:  # ``space`` stays: it maps the answer's bounds
        if self.space is not None and self.within is not None:
            self.within = self.space.region_to_screen(self.within)
        return self


def decoded_size(b64: str | memoryview) -> int:
    """How many bytes the padded base64 ``b64`` stands for (the journal keeps that, not the content)."""
    tail = b64[-2:] if isinstance(b64, str) else b64[-2:].tobytes().decode("ascii", "replace")
    return len(b64) * 3 // 4 - len(tail) + len(tail.rstrip("="))


class WriteFile(_Action):
    """Write a file (base64 ``data``) as the desktop user; relative paths are under ~/Desktop."""

    action: Literal["write_file"]
    path: FilePath
    data: str = Field(description="base64 of the file content")
    overwrite: StrictBool = Field(
        default=True, description="false: never replace an existing file, answer 409 instead"
    )
    # the base64 left where it came, in the request body (the desktop's body.py: no copy of a big file's
    # base64 is made), with ``data`` empty; and the size of the content once ``take_data`` has let it go
    _lifted: memoryview | None = PrivateAttr(default=None)
    _size: int | None = PrivateAttr(default=None)

    def lift(self, encoded: memoryview) -> None:
        """Hold the base64 as ``encoded``, a view of the request body, instead of ``data``."""
        self.data, self._lifted = "", encoded

    def take_data(self) -> str | memoryview:
        """The base64 to decode, once: the action lets go of it, so a big file's base64 is not held while the
        file is written (``data_bytes`` still says its size)."""
        encoded = self._lifted if self._lifted is not None else self.data
        self._size = decoded_size(encoded)
        self.data, self._lifted = "", None
        return encoded

    @property
    def data_bytes(self) -> int:
        """The size of the file's content."""
        if self._size is not None:
            return self._size
        return decoded_size(self._lifted if self._lifted is not None else self.data)


class ReadFile(_Action):
    """Read a file as the desktop user; relative paths are under ~/Desktop."""

    action: Literal["read_file"]
    path: FilePath


Action = Annotated[
    MoveMouse
    | TraceMouse
    | ClickMouse
    | PressMouse
    | DragMouse
    | Scroll
    | TypeKeys
    | PressKeys
    | TypeText
    | PasteText
    | Wait
    | Screenshot
    | CursorPosition
    | Application
    | Accessibility
    | WriteFile
    | ReadFile,
    Field(discriminator="action"),
]
ACTION_ADAPTER: TypeAdapter[Action] = TypeAdapter(Action)
ACTION_MODELS: dict[str, type[BaseModel]] = {
    get_args(m.model_fields["action"].annotation)[0]: m for m in get_args(get_args(Action)[0])
}
ACTION_NAMES = tuple(ACTION_MODELS)
# the input actions: they take settle, screenshot, evidence and space (wait takes settle and screenshot)
OBSERVED_ACTIONS = frozenset(name for name, model in ACTION_MODELS.items() if issubclass(model, Observed))

# fields clients are known to send instead of the real ones: look-alike -> (real field, how to write it)
LOOK_ALIKES: dict[str, tuple[str, str]] = {
    "coordinate": ("coordinates", '"coordinates": {"x": 100, "y": 200}'),
    "amount": ("scrollCount", '"scrollCount": 3'),
    "key": ("keys", '"keys": ["ctrl", "c"]'),
    "modifiers": ("holdKeys", '"holdKeys": ["shift"]'),
}
ACTION_LOOK_ALIKES = {"typ_keys": "type_keys"}


def _check_duration(count: int, delay: int | None) -> None:
    if delay and count * delay > MAX_WAIT_MS:
        raise ValueError(f"{count} presses x {delay} ms delay exceeds the {MAX_WAIT_MS} ms limit per action")


def parse_action(body: Any) -> Action:
    """Validate a decoded JSON request into an Action; ``InvalidAction`` says what is wrong and the fix."""
    if not isinstance(body, dict):
        raise InvalidAction('the request body must be a JSON object such as {"action": "screenshot"}')
    name = body.get("action")
    if not isinstance(name, str) or name not in ACTION_MODELS:
        raise InvalidAction(_unknown_action(name))
    model = ACTION_MODELS[name]
    try:
        _reject_look_alikes(name, model, body)
        try:
            action: Action = model.model_validate(body)  # type: ignore[assignment]  # the union's member
            return action
        except ValidationError as exc:
            raise InvalidAction(f"{name}: " + _describe(exc)) from None
    except InvalidAction as exc:
        exc.file_action = name in FILE_ACTIONS  # their failure bodies repeat the error as `message`
        raise


def parse_action_json(raw: bytes | bytearray) -> Action:
    return parse_action(load_json(raw))


def load_json(raw: bytes | bytearray) -> Any:
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise InvalidAction(f"the request body is not valid JSON ({exc})") from None


def _unknown_action(name: object) -> str:
    valid = ", ".join(ACTION_NAMES)
    if name is None:
        return f"the field 'action' is required; valid actions: {valid}"
    if not isinstance(name, str):
        return f"the field 'action' must be a string; valid actions: {valid}"
    hint = ACTION_LOOK_ALIKES.get(name) or next(iter(difflib.get_close_matches(name, ACTION_NAMES, 1)), None)
    did_you_mean = f"; did you mean '{hint}'?" if hint else ""
    return f"unknown action {name!r}{did_you_mean} Valid actions: {valid}"


def _reject_look_alikes(name: str, model: type[BaseModel], body: dict[str, Any]) -> None:
    for wrong, (right, example) in LOOK_ALIKES.items():
        if wrong in body and right in model.model_fields and right not in body:
            raise InvalidAction(f"{name}: unknown field '{wrong}'; this action takes '{right}': {example}")


def _describe(exc: ValidationError) -> str:
    parts = []
    for err in exc.errors(include_url=False):
        where = ".".join(str(p) for p in err["loc"]) or "request"
        msg = err["msg"].removeprefix("Value error, ")
        if err["type"] == "missing":
            msg = "this field is required"
        parts.append(f"{where}: {msg}")
    return "; ".join(parts[:5]) + (f" (and {len(parts) - 5} more)" if len(parts) > 5 else "")


def openapi_schema() -> tuple[dict[str, Any], dict[str, Any]]:
    """(request body schema, component schemas) of the Action union, for the OpenAPI document."""
    schema = ACTION_ADAPTER.json_schema(ref_template="#/components/schemas/{model}")
    defs = schema.pop("$defs", {})
    return schema, defs
