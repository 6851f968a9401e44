"""Bytebot's agent against /compat/bytebot: every request shape its code sends (the bodies of its
``agent.computer-use.ts``, fields it leaves undefined left out as ``JSON.stringify`` does), the response
fields it reads, and the effect on a real display (a Tk probe window, the pointer, the real programs)."""

from __future__ import annotations

import base64
import io
import time
import uuid
from pathlib import Path

import anyio
import httpx
import pytest
from mcp import Client
from mcp.client.sse import sse_client
from PIL import Image

from deskpilot.computer.actions import ACTION_MODELS
from deskpilot.desktop import spans
from deskpilot.desktop.apps import APPLICATIONS, matches
from deskpilot.desktop.compat_bytebot import APPLICATIONS as BYTEBOT_APPLICATIONS
from tests.integration.desktop.conftest import Desktop, focus, stop_process
from tests.unit.desktop.test_spans import CALLER_ID, TRACE_ID, TRACEPARENT, use_sampler

SHIFT, CONTROL = 1, 4  # X modifier masks


def bytebot(desktop: Desktop, body: dict) -> httpx.Response:
    """What Bytebot's agent sends: ``fetch(`${BYTEBOT_DESKTOP_BASE_URL}/computer-use`, ...)``."""
    return desktop.http.post(f"{desktop.url}/compat/bytebot/computer-use", json=body)


def done(desktop: Desktop, body: dict) -> None:
    """An action bytebotd's service returns nothing for: NestJS answers 201 with an empty body."""
    r = bytebot(desktop, body)
    assert (r.status_code, r.content) == (201, b""), r.text


def test_screenshot_is_a_top_level_image(desktop: Desktop) -> None:
    r = bytebot(desktop, {"action": "screenshot"})
    assert r.status_code == 201 and r.is_success and set(r.json()) == {"image"}  # data.image, as it reads
    image = Image.open(io.BytesIO(base64.b64decode(r.json()["image"])))
    assert (image.format, image.size) == ("PNG", (1920, 1080))


def test_move_trace_and_the_cursor_at_the_top_level(desktop: Desktop) -> None:
    done(desktop, {"action": "move_mouse", "coordinates": {"x": 123, "y": 456}})
    assert desktop.x.pointer() == (123, 456)
    r = bytebot(desktop, {"action": "cursor_position"})
    assert r.status_code == 201 and r.json() == {"x": 123, "y": 456}  # data.x, data.y
    done(desktop, {"action": "trace_mouse", "path": [{"x": 200, "y": 200}, {"x": 321, "y": 234}]})
    assert desktop.x.pointer() == (321, 234)
    path = [{"x": 300, "y": 300}, {"x": 310, "y": 310}]
    done(desktop, {"action": "trace_mouse", "path": path, "holdKeys": ["LeftShift"]})
    assert desktop.x.pointer() == (310, 310)


def test_clicks_presses_drags_and_scrolls_reach_the_window(desktop: Desktop, probe) -> None:
    p = probe()
    focus(desktop, p)
    before = len(p.state()["buttons"])
    done(desktop, {"action": "click_mouse", "coordinates": p.center, "button": "left", "clickCount": 2})
    done(desktop, {"action": "click_mouse", "button": "right", "holdKeys": ["LeftControl"], "clickCount": 1})
    done(desktop, {"action": "press_mouse", "coordinates": p.center, "button": "middle", "press": "down"})
    done(desktop, {"action": "press_mouse", "button": "middle", "press": "up"})
    end = {"x": p.center["x"] + 40, "y": p.center["y"]}
    done(desktop, {"action": "drag_mouse", "path": [p.center, end], "button": "left"})
    done(desktop, {"action": "scroll", "coordinates": p.center, "direction": "down", "scrollCount": 2})
    done(desktop, {"action": "scroll", "direction": "up", "scrollCount": 1, "holdKeys": ["LeftShift"]})
    want = [1, 1, 3, 2, 1, 5, 5, 4]
    state = p.wait(lambda s: s["buttons"][before:] == want, what=f"buttons {want}")
    assert state["buttons"][before:] == want and desktop.x.pointer() == (p.center["x"], p.center["y"])


def test_type_keys_is_a_chord_that_reaches_the_window_as_one_shortcut(desktop: Desktop, probe) -> None:
    p = probe(text="select me")
    focus(desktop, p)
    done(desktop, {"action": "type_keys", "keys": ["LeftControl", "Slash"]})  # Tk's select-all
    p.wait(
        lambda s: s["sel"].rstrip("\n") == "select me", what="ctrl+/ selected all"
    )  # Tk's includes the end
    done(desktop, {"action": "type_keys", "keys": ["LeftControl", "C"], "delay": 20})
    state = p.wait(lambda s: any(k == ord("c") for k, _ in s["keys"]), what="the c of ctrl+c")
    assert [m & (CONTROL | SHIFT) for k, m in state["keys"] if k == ord("c")] == [CONTROL]
    assert state["text"] == "select me"  # a shortcut, not a typed c


def test_press_keys_type_text_and_paste_text(desktop: Desktop, probe) -> None:
    p = probe()
    focus(desktop, p)
    done(desktop, {"action": "press_keys", "keys": ["LeftShift"], "press": "down"})
    done(desktop, {"action": "type_text", "text": "ab"})
    done(desktop, {"action": "press_keys", "keys": ["LeftShift"], "press": "up"})
    done(desktop, {"action": "type_text", "text": " héllo", "delay": 5})
    done(desktop, {"action": "paste_text", "text": " 美 pasted"})
    assert (
        p.wait(lambda s: s["text"] == "AB héllo 美 pasted", what="the text")["text"] == "AB héllo 美 pasted"
    )


def test_wait(desktop: Desktop) -> None:
    started = time.monotonic()
    done(desktop, {"action": "wait", "duration": 300})
    assert time.monotonic() - started >= 0.3


def test_write_file_then_read_file(desktop: Desktop, files_dir: Path) -> None:
    name = f"compat-{uuid.uuid4().hex[:8]}.txt"
    try:
        r = bytebot(
            desktop, {"action": "write_file", "path": name, "data": base64.b64encode(b"hi\n").decode()}
        )
        assert r.status_code == 201 and r.json()["success"] is True and name in r.json()["message"]
        assert (files_dir / name).read_bytes() == b"hi\n"
        r = bytebot(desktop, {"action": "read_file", "path": name})
        assert r.status_code == 201
        assert r.json() == {
            "success": True,
            "data": "aGkK",
            "name": name,
            "size": 3,
            "mediaType": "text/plain",
        }
    finally:
        (files_dir / name).unlink(missing_ok=True)


def test_a_failed_file_action_is_a_result_as_bytebotd_answers_it(desktop: Desktop) -> None:
    r = bytebot(desktop, {"action": "read_file", "path": "no/such/file.txt"})
    assert r.status_code == 201 and r.json()["success"] is False
    assert r.json()["message"].startswith("Error reading file: ")


@pytest.mark.parametrize(
    ("body", "fragment"),
    [
        ({}, "'action' is required"),
        ({"action": "fly"}, "unknown action 'fly'"),
        ({"action": "application", "application": "browser"}, "application: must be one of firefox"),
        ({"action": "click_mouse", "button": "left"}, "clickCount"),
    ],
)
def test_a_refused_request_is_a_nest_400(desktop: Desktop, body: dict, fragment: str) -> None:
    r = bytebot(desktop, body)
    assert r.status_code == 400 and set(r.json()) == {"statusCode", "message", "error"}
    assert r.json()["statusCode"] == 400 and r.json()["error"] == "Bad Request"
    assert fragment in r.json()["message"]


def test_invalid_json_is_a_nest_400(desktop: Desktop) -> None:
    r = desktop.http.post(
        f"{desktop.url}/compat/bytebot/computer-use",
        content=b"{not json",
        headers={"Content-Type": "application/json"},
    )
    assert r.status_code == 400 and r.json()["statusCode"] == 400


def test_a_failed_action_is_bytebotds_500(desktop: Desktop) -> None:
    """More distinct keys outside the layout than there are spare keycodes fails while acting (nothing is
    pressed): bytebotd's controller answers any such failure 500 with its prefix."""
    keys = [chr(0x4E00 + i) for i in range(60)]
    r = bytebot(desktop, {"action": "press_keys", "keys": keys, "press": "down"})
    assert r.status_code == 500 and set(r.json()) == {"statusCode", "message"}
    assert r.json()["message"].startswith("Failed to execute computer action: at most")


def test_each_action_of_a_request_is_a_child_of_its_traceparent(
    desktop: Desktop, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A Bytebot request that is one action of ours, and a chord that is three (keys down, its delay, keys
    up): each a ``desktop.perform`` span of the caller's trace, its parent the caller's span."""
    url, headers = f"{desktop.url}/compat/bytebot/computer-use", {"traceparent": TRACEPARENT.decode()}
    for exported in use_sampler(monkeypatch, None):
        move = {"action": "move_mouse", "coordinates": {"x": 5, "y": 5}}
        for body in (move, {"action": "type_keys", "keys": ["Shift"], "delay": 10}):
            r = desktop.http.post(url, json=body, headers=headers)
            assert r.status_code == 201, r.text
        spans.drain()
        performed = exported.get_finished_spans()
        attributes = [{a.key: a.value.string_value for a in s.attributes} for s in performed]
        performed_actions = [a["deskpilot.action"] for a in attributes]
        assert performed_actions == ["move_mouse", "press_keys", "wait", "press_keys"]
        assert {(s.name, s.trace_id.hex(), s.parent_span_id.hex()) for s in performed} == {
            ("desktop.perform", TRACE_ID, CALLER_ID)
        }


def test_input_tracking_is_accepted(desktop: Desktop) -> None:
    for verb, status in (("start", "started"), ("stop", "stopped")):
        r = desktop.http.post(f"{desktop.url}/compat/bytebot/input-tracking/{verb}")  # no body, as it sends
        assert r.status_code == 201 and r.json() == {"status": status}


def test_the_mcp_endpoint_answers_under_the_prefix_too(desktop: Desktop) -> None:
    """Bytebot's Claude Code agent: an SSE MCP server at its desktop's base URL + /mcp."""

    async def session() -> tuple[int, dict]:
        async with Client(sse_client(f"{desktop.url}/compat/bytebot/mcp")) as client:
            tools = (await client.list_tools()).tools
            await client.call_tool("computer_move_mouse", {"coordinates": {"x": 88, "y": 99}})
            position = await client.call_tool("computer_cursor_position", {})
        return len(tools), position.structured_content or {}

    assert anyio.run(session) == (len(ACTION_MODELS), {"x": 88, "y": 99})  # a tool per action


def test_the_compat_routes_stay_out_of_the_openapi_document(desktop: Desktop) -> None:
    assert not [p for p in desktop.http.get(f"{desktop.url}/openapi.json").json()["paths"] if "compat" in p]


# ------------------------------------------------------------------------------------------ applications


def opens(desktop: Desktop, name: str) -> None:
    """Bytebot's name opens our program for it: the active window is that program's."""
    done(desktop, {"action": "application", "application": name})
    ours = BYTEBOT_APPLICATIONS[name]
    if ours == "desktop":
        assert desktop.x.prop("_NET_SHOWING_DESKTOP", 6) == [1]  # 6 = CARDINAL
    else:
        active = desktop.x.wm_class(desktop.x.active_window())
        assert matches(APPLICATIONS[ours], active), (name, active)


def test_bytebots_light_applications_open_our_programs(desktop: Desktop) -> None:
    for name in ("terminal", "vscode", "directory", "desktop"):
        opens(desktop, name)
    assert {"terminal", "code_editor", "directory"} <= set(desktop.controller.launched())


@pytest.mark.slow
@pytest.mark.parametrize("name", ["firefox", "1password", "thunderbird"])
def test_bytebots_heavy_applications_open_our_programs(desktop: Desktop, name: str) -> None:
    try:
        opens(desktop, name)
    finally:  # stopped at once: their late pop-ups would steal the focus from the tests that follow
        proc = desktop.controller.launched().get(BYTEBOT_APPLICATIONS[name])
        if proc is not None:
            stop_process(proc)


def test_bytebot_names_every_one_of_our_applications() -> None:
    assert sorted(BYTEBOT_APPLICATIONS.values()) == sorted([*APPLICATIONS, "desktop"])
