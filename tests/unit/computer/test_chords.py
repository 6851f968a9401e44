"""Reading the clipboard's text from POST /command's answer to xclip."""

from __future__ import annotations

import pytest

from deskpilot.computer.chords import clipboard_text
from deskpilot.errors import ClientError


def test_the_clipboard_text_or_empty_or_a_failure() -> None:
    assert clipboard_text({"exitCode": 0, "stdout": "a\nb", "stderr": ""}) == "a\nb"
    # nothing holds the clipboard, or holds no text: empty, as a user sees it
    assert (
        clipboard_text({"exitCode": 1, "stdout": "", "stderr": "Error: target STRING not available\n"}) == ""
    )
    with pytest.raises(ClientError, match="xclip exited 127: sh: 1: xclip: not found"):
        clipboard_text({"exitCode": 127, "stdout": "", "stderr": "sh: 1: xclip: not found"})
