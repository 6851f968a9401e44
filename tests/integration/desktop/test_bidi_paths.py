"""A file path with a bidirectional control character (``invoice\\u202etxt.exe`` shows as "invoiceexe.txt") is
refused with a 400 naming the character, over HTTP, MCP and Bytebot's prefix alike, and nothing is written."""

from __future__ import annotations

import unicodedata
from pathlib import Path

import pytest
from mcp import Client
from mcp.types import TextContent

from tests.integration.desktop.conftest import Desktop

CONTROLS = "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200e\u200f\u061c"


def named(char: str) -> str:
    return f"U+{ord(char):04X} {unicodedata.name(char)}"


@pytest.mark.parametrize("char", CONTROLS, ids=named)
def test_a_path_with_a_bidi_control_is_refused_naming_it(
    desktop: Desktop, files_dir: Path, char: str
) -> None:
    before = sorted(files_dir.iterdir())
    path = f"invoice{char}txt.exe"
    for body in (
        {"action": "write_file", "path": path, "data": "aGVsbG8K"},
        {"action": "read_file", "path": path},
        {"action": "write_file", "path": f"/tmp/a{char}b/notes.txt", "data": "aGVsbG8K"},
    ):
        r = desktop.post(**body)
        assert r.status_code == 400, r.text
        error = r.json()["error"]
        assert r.json()["message"] == error
        assert error.startswith(f"{body['action']}: path: path contains the bidirectional control character ")
        assert named(char) in error
    assert sorted(files_dir.iterdir()) == before


def test_bytebots_prefix_refuses_it_too(desktop: Desktop) -> None:
    body = {"action": "write_file", "path": "invoice\u202etxt.exe", "data": "aGVsbG8K"}
    r = desktop.http.post(f"{desktop.url}/compat/bytebot/computer-use", json=body)
    assert r.status_code == 400 and "U+202E RIGHT-TO-LEFT OVERRIDE" in r.json()["message"], r.text


@pytest.mark.anyio
async def test_mcp_refuses_it_with_the_http_message(desktop: Desktop, files_dir: Path) -> None:
    arguments = {"path": "invoice\u202etxt.exe", "data": "aGVsbG8K"}
    http = desktop.post(action="write_file", **arguments)
    async with Client(f"{desktop.url}/mcp") as client:
        result = await client.call_tool("computer_write_file", arguments)
    assert result.is_error
    content = result.content[0]
    assert isinstance(content, TextContent)
    assert content.text == http.json()["error"]
    assert "U+202E RIGHT-TO-LEFT OVERRIDE" in http.json()["error"]
    assert not (files_dir / "invoice\u202etxt.exe").exists()
