"""What people expect of a desktop client beyond one method per action: ``hotkey("ctrl", "c")`` (a chord:
the keys held down in order, then released in reverse) and ``clipboard()`` (the clipboard's text).

``Desktop`` and ``AsyncDesktop`` get them by deriving from ``Chords`` and ``AsyncChords`` (which derive from
the generated ``Actions`` and ``AsyncActions``). The desktop service has no action that reads the clipboard:
``clipboard()`` reads it with ``xclip`` through ``POST /command`` as the desktop user, as the evaluation's
clipboard check does (``read_clipboard``), so it works against any appliance of this version.
"""

from __future__ import annotations

from typing import Any

from deskpilot.computer import fields
from deskpilot.computer.client_actions import Actions, AsyncActions
from deskpilot.errors import ClientError

CLIPBOARD_COMMAND = "xclip -o -selection clipboard"


def clipboard_text(out: dict[str, Any]) -> str:
    """The clipboard's text from ``POST /command``'s answer to ``CLIPBOARD_COMMAND``: empty when nothing
    holds text (xclip says the target is "not available"); an error when xclip could not read it."""
    if out["exitCode"] == 0:
        return str(out["stdout"])
    if "not available" in str(out["stderr"]):  # no owner, or no text in it: empty, as a user sees it
        return ""
    detail = f"xclip exited {out['exitCode']}: {str(out['stderr'])[-300:]}"
    raise ClientError(f"reading the clipboard failed: {detail}", 500, detail)


class Chords(Actions):
    def command(self, command: str, limit: float = 30.0) -> dict[str, Any]:
        raise NotImplementedError  # the client's POST /command

    def hotkey(self, *keys: str, settle: fields.Settle | dict[str, Any] | None = None) -> None:
        """Press a chord, ``hotkey("ctrl", "shift", "t")``: each key down in order, then all up in reverse;
        ``settle`` waits on the screen after it. A bad key name fails before any key is pressed."""
        self.press_keys(keys, "down")
        self.press_keys(keys, "up", settle=settle)

    def clipboard(self) -> str:
        """The clipboard's text (CLIPBOARD, not the primary selection); empty when it holds none."""
        return clipboard_text(self.command(CLIPBOARD_COMMAND))


class AsyncChords(AsyncActions):
    async def command(self, command: str, limit: float = 30.0) -> dict[str, Any]:
        raise NotImplementedError  # the client's POST /command

    async def hotkey(self, *keys: str, settle: fields.Settle | dict[str, Any] | None = None) -> None:
        """``Chords.hotkey``, from asyncio code."""
        await self.press_keys(keys, "down")
        await self.press_keys(keys, "up", settle=settle)

    async def clipboard(self) -> str:
        """``Chords.clipboard``, from asyncio code."""
        return clipboard_text(await self.command(CLIPBOARD_COMMAND))
