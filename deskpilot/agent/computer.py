"""Running one ``computer_*`` tool call on the desktop: validate, map coordinates, act, settle, screenshot.

The model works in the scaled screenshot's pixels: its arguments go to the contract's action model with
``space`` set to that image, so they are checked on the image the model saw and mapped onto the screen by
the same transform as a client's over HTTP or MCP (``deskpilot.computer.fields``). A request
the desktop refuses (4xx) comes back to the model as an error tool result so it can correct itself;
an unreachable desktop (or 503) is retried briefly and then raised as `DesktopDown`.
"""

from __future__ import annotations

import asyncio
import binascii
import hashlib
import logging
from dataclasses import dataclass
from typing import Any

import pybase64
from pydantic import ValidationError

from deskpilot.agent.context import image_block, text_block
from deskpilot.agent.frames import resize_png, settle
from deskpilot.agent.tools import HIDDEN_ACTIONS, Zoom
from deskpilot.computer.actions import ACTION_MODELS, parse_action
from deskpilot.computer.client import AsyncDesktop, DesktopClientError
from deskpilot.computer.geometry import SCREEN, Size, png_size, scaled_size, screen_rect, to_model
from deskpilot.computer.tools import CHANGES_SCREEN, CLIENT_FIELDS
from deskpilot.config import AgentSettings
from deskpilot.errors import InvalidAction

log = logging.getLogger(__name__)

MAX_TEXT_CHARS = 20_000
# the elements tool's bound: ~2,000 tokens at 4 characters a token, however big the window's tree
MAX_ELEMENT_LINES = 150
MAX_ELEMENT_CHARS = 8_000
MAX_ELEMENT_NAME = 80  # characters of one element's name (a link's may be a paragraph)
VALUE_ROLES = frozenset({"entry", "text", "combo box", "spin button"})  # what they hold is worth a look
MAX_ELEMENT_VALUE = 40
MAX_IMAGE_BYTES = 5 * 1024 * 1024
DOWN_RETRIES = (0.5, 1.0, 2.0)


class DesktopDown(Exception):
    """The desktop service is unreachable or its display is unavailable, even after retries."""


@dataclass
class ToolOutcome:
    """A tool call's result for the model: its content blocks, whether it is an error, and a key of what
    it produced."""

    content: list[dict[str, Any]]
    is_error: bool = False
    key: str = ""  # hash of the screenshot / text it produced, for the repeated-action breaker


def _error(message: str) -> ToolOutcome:
    return ToolOutcome([text_block(message)], is_error=True, key=message)


def _digest(settled: str) -> str:
    return hashlib.blake2b(settled.encode(), digest_size=16).hexdigest()


def _settle(settings: AgentSettings) -> dict[str, int]:
    """The settle each action asks for: the desktop's own timing per action unless the settings name one."""
    asked = {"quietMs": settings.settle_quiet_ms, "expectMs": settings.settle_expect_ms}
    return {"maxMs": settings.settle_timeout_ms} | {k: v for k, v in asked.items() if v is not None}


class Computer:
    """The desktop as the model sees it: scaled screenshots and model-space coordinates."""

    def __init__(self, desktop: AsyncDesktop, settings: AgentSettings) -> None:
        self.desktop = desktop
        self.image = scaled_size(settings.screenshot_width)
        self.settle_within = settings.settle_timeout_ms / 1000
        self.settle_interval = settings.settle_interval_ms / 1000
        # one request acts, settles and looks: the desktop watches the screen's damage for us
        self.observe = {
            "settle": _settle(settings),
            "screenshot": {"width": self.image.width},
            "evidence": True,
        }
        self.zoomed: dict[str, Any] | None = None  # the last zoom's image, as a ``space``

    async def zoom(self, args: dict[str, Any]) -> ToolOutcome:
        """A region of the screen (given in the model's pixels) magnified to the model's width; its pixels
        are then the ``space`` of a pointing tool called with ``inZoom``."""
        try:
            asked = Zoom.model_validate(args)
        except ValidationError as exc:
            return _error(f"Invalid arguments: {exc.errors()[0]['msg']}")
        rect = screen_rect(asked.x, asked.y, asked.width, asked.height, self.image)
        if rect is None:
            return _error(f"The region must lie on the {self.image} screenshot.")
        region = dict(zip(("x", "y", "width", "height"), rect, strict=True))
        try:
            body = await self._call("screenshot", region=region, width=self.image.width)
        except DesktopClientError as exc:
            return _error(exc.message)
        data = body["data"]
        self.zoomed = {"width": data["size"]["width"], "region": data["region"]}
        factor = data["scale"] * SCREEN.width / self.image.width  # zoom pixels per screenshot pixel
        said = (
            f"The region x={asked.x}, y={asked.y}, {asked.width}x{asked.height} of your screenshot, "
            f"magnified {factor:.1f}x ({data['size']['width']}x{data['size']['height']}). To act on a point "
            "of this image, call the tool with inZoom: true and its coordinates in this image."
        )
        shot = str(data["image"])
        return ToolOutcome([text_block(said), image_block(shot)], key=_digest(shot))

    async def elements(self) -> ToolOutcome:
        """The focused window's controls as lines of text, centres in the model's pixels (``render``): what
        the accessibility action answers with ``interactiveOnly`` and ``space``, bounded in tokens."""
        fields: dict[str, Any] = {"interactiveOnly": True}
        if self.image != SCREEN:
            fields["space"] = {"width": self.image.width}
        try:  # not _call: an AT-SPI bus down is a 503 the model can work around, not the desktop down
            body = await self.desktop.action("accessibility", **fields)
        except DesktopClientError as exc:
            return _error(f"The accessibility tree is not available ({exc.message}); use the screenshot.")
        said = render(body.get("data") or {})
        return ToolOutcome([text_block(said)], key=_digest(said))

    async def _call(self, action: str, **fields: Any) -> dict[str, Any]:
        """One desktop call; retried while the desktop is unreachable or 503, then DesktopDown."""
        for delay in (*DOWN_RETRIES, None):
            try:
                return await self.desktop.action(action, **fields)
            except DesktopClientError as exc:
                if exc.status == 401:  # not a token the desktop takes: neither the model nor a retry can help
                    raise DesktopDown(f"{exc.message} (DESKPILOT_TOKEN is not the desktop's)") from exc
                if exc.status not in (
                    0,
                    502,
                    503,
                ):  # a 504 is a time-out of the desktop: the model handles it
                    raise
                if delay is None:
                    raise DesktopDown(exc.message) from exc
                log.warning("desktop unavailable; retrying", extra={"error": exc.message, "delay_s": delay})
                await asyncio.sleep(delay)
        raise AssertionError("unreachable")

    async def _frame(self) -> str:
        body = await self._call("screenshot", width=self.image.width)
        return str(body["data"]["image"])

    def _fit(self, b64: str) -> str:
        """The frame at the model's size; resized here only if the desktop did not do it."""
        head = pybase64.b64decode(b64[:44])
        if png_size(head) == self.image:
            return b64
        png = resize_png(pybase64.b64decode(b64), self.image)
        return pybase64.b64encode(png).decode("ascii")

    async def screenshot(self) -> str:
        """A base64 PNG of the screen at the model's size."""
        return self._fit(await self._frame())

    async def settled_screenshot(self) -> str:
        settled = await settle(self._frame, within=self.settle_within, interval=self.settle_interval)
        return self._fit(settled.frame)

    async def run(self, action: str, args: dict[str, Any]) -> ToolOutcome:
        """Run ``computer_<action>`` with the model's `args`; never raises for the model's mistakes."""
        model = ACTION_MODELS.get(action)
        if model is None or action in HIDDEN_ACTIONS:
            return _error(f"Unknown action {action!r}.")
        if "__invalid_json__" in args:
            return _error(f"Arguments were not a JSON object: {args['__invalid_json__'][:200]}")
        raw = {k: v for k, v in args.items() if k not in CLIENT_FIELDS and k != "inZoom"}
        if args.get("inZoom") is True:
            if self.zoomed is None:
                return _error("There is no zoom yet: call zoom first, or give screenshot coordinates.")
            raw["space"] = self.zoomed
        elif self.image != SCREEN:
            raw["space"] = {"width": self.image.width}
        try:  # the desktop's own validation, so the model gets the message /computer-use would give
            validated = parse_action({**raw, "action": action})
        except InvalidAction as exc:
            return _error(f"Invalid arguments: {exc.message}")
        payload = validated.model_dump(mode="json", exclude_none=True, by_alias=True)
        payload.pop("action", None)
        if action == "screenshot":
            shot = await self.screenshot()
            return ToolOutcome([image_block(shot)], key=_digest(shot))
        observed = action in CHANGES_SCREEN
        # what the action's model takes of settle, screenshot and evidence (a wait takes no evidence)
        asked = {k: v for k, v in self.observe.items() if k in model.model_fields} if observed else {}
        try:
            body = await self._call(action, **{**payload, **asked})
        except DesktopClientError as exc:
            return _error(exc.message)
        if action == "cursor_position":
            x, y = to_model(body["data"]["x"], body["data"]["y"], self.image)
            msg = f"The pointer is at x={x}, y={y}."
            return ToolOutcome([text_block(msg)], key=msg)
        if action == "read_file":
            return _file_outcome(body)
        if action == "write_file":
            msg = str(body.get("message") or f"Wrote {payload.get('path')}.")
            return ToolOutcome([text_block(msg)], key=msg)
        if observed:
            frame = (body.get("data") or {}).get("image")
            # a desktop that predates settling ignores the fields: settle by comparing frames then
            shot = self._fit(str(frame)) if frame else await self.settled_screenshot()
            said = describe(body.get("evidence"), self.image) + unsettled(body)
            return ToolOutcome([text_block(said), image_block(shot)], key=_digest(shot))
        return ToolOutcome([text_block("Done.")], key="done")


def describe(evidence: Any, image: Size = SCREEN) -> str:
    """The tool result's text: what the desktop saw the action do, so the model can tell a click that hit
    nothing from one that landed, and keys typed into nothing (in the pixels of the ``image`` it sees)."""
    if not isinstance(evidence, dict):
        return "Done."
    parts = ["Done."]
    if evidence.get("keysDelivered") is False:
        parts.append("No window has the keyboard focus, so the keys went nowhere: click into a window first.")
    if evidence.get("textChanged") is False:
        parts.append("The text of the focused field did not change.")
    box = evidence.get("damaged")
    if evidence.get("screenChanged") is False:
        parts.append("Nothing on the screen changed.")
    elif isinstance(box, dict) and box.get("width") and box.get("height"):
        x0, y0 = to_model(box["x"], box["y"], image)
        x1, y1 = to_model(box["x"] + box["width"] - 1, box["y"] + box["height"] - 1, image)
        parts.append(f"The screen changed within x={x0}..{x1}, y={y0}..{y1}.")
    before, after = evidence.get("focusBefore") or {}, evidence.get("focusAfter") or {}
    if after and after.get("id") != before.get("id"):
        parts.append(f"The focus moved to the window {after.get('title')!r}.")
    return " ".join(parts)


def render(tree: dict[str, Any]) -> str:
    """The elements tool's text: a header naming the window, then one line per element shown (role, name,
    what a field holds, centre ``(x, y)``), in the tree's order (top to bottom, mostly); cut at
    ``MAX_ELEMENT_LINES`` lines or ``MAX_ELEMENT_CHARS`` characters, which the last line says, as the header
    says the size in tokens (4 characters a token, as ``estimate_tokens`` counts)."""
    root = tree.get("root")
    if not isinstance(root, dict):
        return str(tree.get("message") or "The focused window exposes no accessibility tree.")
    lines: list[str] = []
    shown, used = 0, 0
    elements = [node for node in _descendants(root) if node.get("bounds")]
    for node in elements:
        line = _line(node)
        if shown == MAX_ELEMENT_LINES or used + len(line) + 1 > MAX_ELEMENT_CHARS:
            break
        lines.append(line)
        shown, used = shown + 1, used + len(line) + 1
    if shown < len(elements):
        lines.append(
            f"[{len(elements) - shown} more not listed: the list is capped at {MAX_ELEMENT_LINES} lines "
            f"and {MAX_ELEMENT_CHARS} characters]"
        )
    if tree.get("capped"):
        lines.append(f"[the tree itself was cut: {', '.join(tree['capped'])}]")
    body = "\n".join(lines)
    title = _clip(str(root.get("name") or ""), MAX_ELEMENT_NAME)
    head = (
        f"The focused window {title!r} ({root.get('role')}): {len(elements)} elements, centres (x, y) in "
        f"screenshot pixels; this list is {len(body)} characters, about {len(body) // 4} tokens."
    )
    return f"{head}\n{body}" if body else f"{head}\nNo element a user can act on is shown."


def _descendants(node: dict[str, Any]) -> list[dict[str, Any]]:
    return [n for child in node.get("children") or [] for n in (child, *_descendants(child))]


def _line(node: dict[str, Any]) -> str:
    box = node["bounds"]
    parts = [str(node.get("role") or "element")]
    if node.get("name"):
        parts.append(repr(_clip(str(node["name"]), MAX_ELEMENT_NAME)))
    if node.get("role") in VALUE_ROLES and node.get("text"):
        parts.append(f"holding {_clip(str(node['text']), MAX_ELEMENT_VALUE)!r}")
    states = [s for s in ("focused", "checked", "selected", "expanded") if s in node.get("states", ())]
    if "sensitive" not in node.get("states", ("sensitive",)):
        states.append("disabled")
    if states:
        parts.append(f"[{', '.join(states)}]")
    parts.append(f"({box['x'] + box['width'] // 2}, {box['y'] + box['height'] // 2})")
    return " ".join(parts)


def _clip(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def unsettled(body: dict[str, Any]) -> str:
    """A word on a frame taken before the screen came to rest: the model should look again, not conclude."""
    if body.get("settled") is False:
        waited = float(body.get("settledMs") or 0) / 1000
        return (
            f" The screen had not come to rest after {waited:.1f} s (still changing, or the program still at "
            "work), so this screenshot may not show the final state: wait or take a screenshot before "
            "concluding."
        )
    return ""


def _file_outcome(body: dict[str, Any]) -> ToolOutcome:
    name, size, media = body.get("name", "file"), int(body.get("size") or 0), body.get("mediaType") or ""
    head = f"{name} ({size} bytes, {media or 'unknown type'})"
    try:
        data = pybase64.b64decode(body.get("data") or "", validate=True)
    except (binascii.Error, ValueError):
        return _error(f"{head}: the desktop returned invalid base64")
    key = hashlib.blake2b(data, digest_size=16).hexdigest()
    if media in ("image/png", "image/jpeg", "image/gif", "image/webp") and len(data) <= MAX_IMAGE_BYTES:
        return ToolOutcome([text_block(head), image_block(body["data"], media)], key=key)
    try:
        content = data.decode("utf-8")
    except UnicodeDecodeError:
        return ToolOutcome([text_block(f"{head}: binary content, not shown.")], key=key)
    if len(content) > MAX_TEXT_CHARS:
        content = content[:MAX_TEXT_CHARS] + f"\n[... truncated, {len(content)} characters in all]"
    return ToolOutcome([text_block(f"{head}:\n{content}")], key=key)
