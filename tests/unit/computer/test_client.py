"""The desktop client's typed methods are the action models: generated from them (and regenerated here, so a
changed action fails until scripts/gen-client.py is run), validated by them before anything is sent."""

from __future__ import annotations

import inspect
import io
import re
import runpy
from pathlib import Path

import pytest
from PIL import Image

from deskpilot.computer import client_actions
from deskpilot.computer.actions import ACTION_MODELS
from deskpilot.computer.client import AsyncDesktop, Desktop, DesktopClientError, request_body
from deskpilot.computer.results import FileData, ScreenImage, as_base64, image_size

ROOT = Path(__file__).resolve().parents[3]


def snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


def test_the_typed_methods_are_generated_from_the_action_models() -> None:
    """client_actions.py is what scripts/gen-client.py makes of today's models: run it after an action
    changes (a field added, renamed, made optional ...)."""
    gen = runpy.run_path(str(ROOT / "scripts" / "gen-client.py"))
    assert gen["module"]() == (ROOT / "deskpilot" / "computer" / "client_actions.py").read_text(), (
        "the desktop client's methods drifted from the action models: run scripts/gen-client.py"
    )


@pytest.mark.parametrize("cls", [Desktop, AsyncDesktop])
@pytest.mark.parametrize("action", ACTION_MODELS)
def test_each_action_is_a_method_whose_parameters_are_its_fields(cls: type, action: str) -> None:
    method = getattr(cls, action)
    assert inspect.iscoroutinefunction(method) == (cls is AsyncDesktop)
    params = list(inspect.signature(method).parameters)[1:]
    fields = [f for f in ACTION_MODELS[action].model_fields if f != "action"]
    assert sorted(params) == sorted(snake(f) for f in fields)
    assert method.__doc__


def test_no_method_is_left_over_from_an_action_that_is_gone() -> None:
    generated = {
        name
        for name, value in vars(client_actions.Actions).items()
        if callable(value) and not name.startswith("_")
    }
    assert generated == set(ACTION_MODELS)


def test_a_call_sends_only_what_differs_from_the_models_defaults() -> None:
    assert request_body("screenshot", {"format": "png", "quality": 80, "width": 640, "scale": None}) == {
        "action": "screenshot",
        "width": 640,
    }
    # write_file's overwrite is sent only when false: a spec-following desktop gets the spec's request
    assert "overwrite" not in request_body("write_file", {"path": "a", "data": "", "overwrite": True})
    assert request_body("write_file", {"path": "a", "data": "", "overwrite": False})["overwrite"] is False


@pytest.mark.parametrize(
    ("action", "fields", "message"),
    [
        ("click_mouse", {"coordinates": {"x": 5000, "y": 1}, "button": "left", "clickCount": 1}, "x"),
        ("type_keys", {"keys": ["ctrl", "nokey"]}, "nokey"),
        ("screenshot", {"width": 100, "scale": 0.5}, "either 'width' or 'scale'"),
    ],
)
def test_a_call_the_service_would_refuse_fails_before_it_is_sent(
    action: str, fields: dict[str, object], message: str
) -> None:
    with pytest.raises(DesktopClientError) as caught:
        request_body(action, fields)
    assert caught.value.status == 400 and message in caught.value.detail
    assert str(caught.value).startswith(f"{action} failed (400): ")


def test_an_unreachable_desktop_is_status_0() -> None:
    with Desktop("http://127.0.0.1:9", timeout=2) as desktop, pytest.raises(DesktopClientError) as caught:
        desktop.cursor_position()
    assert caught.value.status == 0 and "unreachable" in caught.value.message


@pytest.mark.parametrize("fmt", ["PNG", "JPEG", "WEBP"])
@pytest.mark.parametrize("lossless", [False, True])
def test_a_screenshot_knows_its_size_in_every_format(fmt: str, lossless: bool) -> None:
    out = io.BytesIO()
    mode = "RGBA" if lossless and fmt == "WEBP" else "RGB"  # RGBA WebP is written as VP8X / VP8L
    Image.new(mode, (321, 123), (1, 2, 3)).save(out, format=fmt, lossless=lossless)
    shot = ScreenImage(out.getvalue(), f"image/{fmt.lower()}")
    assert shot.size == (321, 123) == image_size(bytes(shot))
    assert shot.image().size == (321, 123) and shot == out.getvalue()


def test_files_are_bytes_and_text_is_utf8() -> None:
    assert as_base64("é") == as_base64("é".encode()) == "w6k="
    data = FileData("héllo".encode(), "a.txt", "text/plain")
    assert data == "héllo".encode() and data.text == "héllo" and data.name == "a.txt"
