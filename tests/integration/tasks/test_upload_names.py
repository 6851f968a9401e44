"""An upload whose name holds a bidirectional control character (``invoice\\u202etxt.exe`` shows as
"invoiceexe.txt") is refused with a 400 naming the character, in JSON and multipart, and no task is made."""

from __future__ import annotations

import base64
import unicodedata

import httpx
import pytest

from tests.integration.tasks.test_api import assert_error

CONTROLS = "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200e\u200f\u061c"


def named(char: str) -> str:
    return f"U+{ord(char):04X} {unicodedata.name(char)}"


@pytest.mark.parametrize("char", CONTROLS, ids=named)
def test_a_json_upload_name_with_a_bidi_control_is_refused(api: httpx.Client, char: str) -> None:
    files = [
        {"name": "fine.txt", "data": base64.b64encode(b"ok").decode()},
        {"name": f"invoice{char}txt.exe", "data": base64.b64encode(b"MZ").decode()},
    ]
    r = api.post("/tasks", json={"description": "open the invoice", "files": files})
    body = assert_error(r, 400, "files[1].name: contains the bidirectional control character", named(char))
    assert body["message"].endswith("; remove it")
    assert api.get("/tasks").json() == []


def test_a_multipart_upload_name_with_a_bidi_control_is_refused(api: httpx.Client) -> None:
    r = api.post(
        "/tasks",
        data={"description": "open the invoice"},
        files=[("files", ("invoice\u202etxt.exe", b"MZ", "application/octet-stream"))],
    )
    assert_error(r, 400, "files[0].name:", "U+202E RIGHT-TO-LEFT OVERRIDE")
    assert api.get("/tasks").json() == []


def test_other_unicode_names_are_kept(api: httpx.Client) -> None:
    name = "facture \u00e9t\u00e9 \u0627\u0644\u0641\u0627\u062a\u0648\u0631\u0629.pdf"  # accents, Arabic
    r = api.post("/tasks", json={"description": "d", "files": [{"name": name, "data": "JVBERg=="}]})
    assert r.status_code == 201, r.text
    assert [f["name"] for f in api.get(f"/tasks/{r.json()['id']}").json()["files"]] == [name]
