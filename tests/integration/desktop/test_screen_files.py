"""screenshot, files and the error bodies of the desktop service."""

from __future__ import annotations

import base64
import os
import pwd
import shutil
import uuid
from pathlib import Path
from typing import Any

import cv2
import numpy as np
import pytest

from deskpilot.computer.actions import ACTION_MODELS
from tests.integration.desktop.conftest import MAX_FILE_BYTES, Desktop


def _decode(b64: str) -> np.ndarray:
    img = cv2.imdecode(np.frombuffer(base64.b64decode(b64), np.uint8), cv2.IMREAD_COLOR)
    assert img is not None
    return img  # BGR


def test_screenshot_is_a_full_hd_png_with_the_pixels_of_a_known_window(desktop: Desktop, probe) -> None:
    p = probe(x=400, y=300, width=500, height=250, colour="#ff0000")
    body = desktop.act(action="screenshot")
    assert set(body) == {"success", "data"} and set(body["data"]) == {"image"}
    raw = base64.b64decode(body["data"]["image"])
    assert raw.startswith(b"\x89PNG\r\n\x1a\n")
    img = _decode(body["data"]["image"])
    assert img.shape == (1080, 1920, 3)
    region = img[p.y + 4 : p.y + 16, p.x + 4 : p.x + 16]  # the window's padding, all red
    assert (region == [0, 0, 255]).all()


@pytest.mark.parametrize(("fmt", "magic"), [("jpeg", b"\xff\xd8\xff"), ("webp", b"RIFF")])
def test_screenshot_options_downscale_and_change_the_format(desktop: Desktop, fmt: str, magic: bytes) -> None:
    body = desktop.act(action="screenshot", format=fmt, quality=60, width=960)
    assert body["data"]["mediaType"] == f"image/{fmt}"
    assert base64.b64decode(body["data"]["image"]).startswith(magic)
    assert _decode(body["data"]["image"]).shape == (540, 960, 3)
    assert _decode(desktop.act(action="screenshot", scale=0.25)["data"]["image"]).shape == (270, 480, 3)


@pytest.fixture
def desktop_dir(desktop: Desktop):
    """A unique directory in the service's files directory (removed afterwards)."""
    name = f"deskpilot-test-{uuid.uuid4().hex[:8]}"
    yield name, desktop.controller.hands.root / name
    shutil.rmtree(desktop.controller.hands.root / name, ignore_errors=True)


def test_files_round_trip_as_the_desktop_user_with_mode_0644(desktop: Desktop, desktop_dir) -> None:
    rel, path = desktop_dir
    content = "héllo wörld\n".encode() * 100
    body = desktop.act(
        action="write_file", path=f"{rel}/sub/notes.txt", data=base64.b64encode(content).decode()
    )
    assert str(path / "sub" / "notes.txt") in body["message"]
    user = pwd.getpwnam(desktop.controller.settings.user)
    for p in (path, path / "sub", path / "sub" / "notes.txt"):
        st = p.stat()
        assert (st.st_uid, st.st_gid) == (user.pw_uid, user.pw_gid), p
    assert (path / "sub" / "notes.txt").stat().st_mode & 0o777 == 0o644
    assert not [f for f in (path / "sub").iterdir() if f.name.endswith(".tmp")]
    read = desktop.act(action="read_file", path=f"{rel}/sub/notes.txt")
    assert base64.b64decode(read["data"]) == content
    assert (read["name"], read["size"], read["mediaType"]) == ("notes.txt", len(content), "text/plain")
    # absolute paths are used as given; the media type is sniffed when the extension says nothing
    png = base64.b64encode(b"\x89PNG\r\n\x1a\n" + b"\x00" * 32).decode()
    desktop.act(action="write_file", path=str(path / "image"), data=png)
    assert desktop.act(action="read_file", path=str(path / "image"))["mediaType"] == "image/png"


def test_file_actions_of_the_tests_stay_out_of_the_real_home(desktop: Desktop, files_dir: Path) -> None:
    name = f"deskpilot-test-{uuid.uuid4().hex[:8]}.txt"
    body = desktop.act(action="write_file", path=name, data=base64.b64encode(b"private").decode())
    assert (files_dir / name).read_bytes() == b"private" and str(files_dir / name) in body["message"]
    real_home = Path(pwd.getpwnam(desktop.controller.settings.user).pw_dir)
    assert not (files_dir / name).resolve().is_relative_to(real_home)
    (files_dir / name).unlink()


def test_files_use_only_the_desktop_users_rights(desktop: Desktop) -> None:
    if os.geteuid() != 0:
        pytest.skip("runs as root to prove the service drops its rights")
    r = desktop.post(action="write_file", path="/root/deskpilot-must-not-exist", data="eA==")
    assert r.status_code == 400 and "permission denied" in r.json()["error"]
    assert r.json()["message"] == r.json()["error"]
    assert not Path("/root/deskpilot-must-not-exist").exists()
    r = desktop.post(action="read_file", path="/etc/shadow")
    assert r.status_code == 400 and "permission denied" in r.json()["error"]


def test_error_400_invalid_action_names_the_fix(desktop: Desktop) -> None:
    cases: list[tuple[dict[str, Any], str]] = [
        ({"action": "typ_keys", "keys": ["a"]}, "did you mean 'type_keys'"),
        ({"action": "fly"}, "Valid actions: move_mouse"),
        ({"action": "click_mouse", "coordinate": [1, 2], "button": "left", "clickCount": 1}, "'coordinates'"),
        ({"action": "scroll", "direction": "up", "amount": 3}, "'scrollCount'"),
        ({"action": "type_keys", "key": "a"}, "'keys'"),
        ({"action": "type_keys", "keys": ["ctrll"]}, "did you mean 'ctrl'"),
        ({"action": "move_mouse", "coordinates": {"x": 1920, "y": 5}}, "less than 1920"),
        ({"action": "click_mouse", "button": "left", "clickCount": 11}, "clickCount"),
        ({"action": "wait", "duration": 300001}, "duration"),
        ({"action": "move_mouse"}, "coordinates: this field is required"),
        ({"action": "write_file", "path": "x.bin", "data": "not base64!"}, "base64"),
    ]
    for body, fragment in cases:
        r = desktop.post(**body)
        assert r.status_code == 400, (body, r.text)
        assert r.json()["success"] is False and fragment in r.json()["error"], (body, r.json())
    r = desktop.http.post(
        f"{desktop.url}/computer-use", content=b"{not json", headers={"content-type": "application/json"}
    )
    assert r.status_code == 400 and "not valid JSON" in r.json()["error"]


def test_error_404_missing_file(desktop: Desktop) -> None:
    r = desktop.post(action="read_file", path="deskpilot-no-such-file.txt")
    assert r.status_code == 404
    body = r.json()
    assert body["success"] is False and "does not exist" in body["error"] and body["message"] == body["error"]


def test_error_413_too_large(desktop: Desktop, desktop_dir) -> None:
    rel, _ = desktop_dir
    big = base64.b64encode(b"x" * (MAX_FILE_BYTES + 1)).decode()
    r = desktop.post(action="write_file", path=f"{rel}/big.bin", data=big)
    assert r.status_code == 413 and "limit" in r.json()["error"]


def test_health_reports_the_display(desktop: Desktop) -> None:
    body = desktop.http.get(f"{desktop.url}/health").json()
    assert body["status"] == "ok" and body["display"] is True and body["version"]


def test_openapi_documents_every_action(desktop: Desktop) -> None:
    schema = desktop.http.get(f"{desktop.url}/openapi.json").json()
    union = schema["components"]["schemas"]["Action"]
    assert union["discriminator"]["propertyName"] == "action"
    assert union["discriminator"]["mapping"].keys() == ACTION_MODELS.keys()
    assert desktop.http.get(f"{desktop.url}/docs").status_code == 200
