"""Schemathesis fuzzes the desktop OpenAPI with the token set: no generated request may produce a 500.

It runs against its own bare Xvfb (no window manager, nothing to break) with files confined to a scratch
directory. Generated values that would only make the run slow or leave the machine dirty are clamped
before sending (long waits and delays, huge texts, launching applications, absolute file paths); every
other field is sent as generated, including the negative (schema-violating) cases.
"""

from __future__ import annotations

import os
import pwd
import shutil
from pathlib import Path

import httpx
import pytest
import schemathesis
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from schemathesis.generation import GenerationMode

from deskpilot.config import DesktopSettings
from deskpilot.desktop.api import create_app
from testbed.atspi import accessibility_bus
from testbed.net import ServerThread
from testbed.security import BEARER, with_digest
from testbed.xvfb import start_window_manager, start_xvfb


def _clamp(body: object, files_dir: Path) -> None:
    if not isinstance(body, dict):
        return
    for field, cap in (("duration", 20), ("delay", 1)):
        value = body.get(field)
        if isinstance(value, int | float) and not isinstance(value, bool) and value > cap:
            body[field] = cap
    if isinstance(body.get("text"), str):
        body["text"] = body["text"][:40]
    if body.get("application") not in (None, "desktop") and body.get("action") == "application":
        body["application"] = "desktop"
    if isinstance(body.get("path"), str) and body["path"].startswith(("/", "~")):
        body["path"] = str(files_dir / body["path"].lstrip("/~"))
    if isinstance(body.get("path"), list):
        body["path"] = body["path"][:50]


def fuzzing(examples: int) -> settings:
    """Hypothesis settings of these fuzz tests: ``examples`` cases, reported at the first failure (no
    minutes spent shrinking it), no deadline, no example database, no health check."""
    return settings(
        max_examples=examples,
        phases=[Phase.explicit, Phase.generate],
        deadline=None,
        database=None,
        suppress_health_check=list(HealthCheck),
    )


@pytest.fixture(scope="module")
def fuzz_server(tmp_path_factory):
    files_dir = tmp_path_factory.mktemp("fuzz-files")
    user = pwd.getpwnam(DesktopSettings().user)
    if os.geteuid() == 0:
        os.chown(files_dir, user.pw_uid, user.pw_gid)
    d = start_xvfb()
    try:
        start_window_manager(d)
        settings = DesktopSettings(display=d.name, files_dir=files_dir, max_file_bytes=1 << 16)
        app = create_app(settings, security=with_digest())  # the token set, as in the appliance
        # the session's AT-SPI bus, as in the appliance: the accessibility action runs, not a 503
        with accessibility_bus(d, settings.user), ServerThread(app) as server:
            yield server.url, app.openapi(), files_dir
    finally:
        d.stop()
        shutil.rmtree(files_dir, ignore_errors=True)


def test_no_generated_request_causes_a_server_error(fuzz_server) -> None:
    url, openapi, files_dir = fuzz_server
    schema = schemathesis.openapi.from_dict(openapi)
    operation = schema["/computer-use"]["POST"]
    cases = st.one_of(
        operation.as_strategy(GenerationMode.POSITIVE), operation.as_strategy(GenerationMode.NEGATIVE)
    )
    http = httpx.Client(timeout=30, headers=BEARER)

    @fuzzing(150)
    @given(case=cases)
    def check(case) -> None:
        _clamp(case.body, files_dir)
        r = case.call(base_url=url, headers=BEARER, timeout=20)
        assert r.status_code < 500, (case.body, r.status_code, r.text)
        assert r.status_code != 401, r.text  # the token opened every request: the fuzzing reached the routes
        assert r.json()["success"] is (r.status_code == 200), r.text

    try:
        check()
        # leave no button or key held on the display
        for button in ("left", "middle", "right"):
            http.post(f"{url}/computer-use", json={"action": "press_mouse", "button": button, "press": "up"})
    finally:
        http.close()


def test_no_malformed_command_request_causes_a_server_error_or_runs(fuzz_server) -> None:
    """POST /command with schema-violating bodies only: a valid one would run whatever shell text the
    fuzzer made up, as the desktop user. Each is refused with a 400 and nothing runs."""
    url, openapi, _ = fuzz_server
    operation = schemathesis.openapi.from_dict(openapi)["/command"]["POST"]

    @fuzzing(80)
    @given(case=operation.as_strategy(GenerationMode.NEGATIVE))
    def check(case) -> None:
        r = case.call(base_url=url, headers=BEARER, timeout=20)
        assert r.status_code < 500, (case.body, r.status_code, r.text)
        assert r.status_code != 200, (case.body, r.text)

    check()


def test_no_generated_journal_query_causes_a_server_error(fuzz_server) -> None:
    """GET /journal with any query the schema allows or violates: a page or a 400, never a 500."""
    url, openapi, _ = fuzz_server
    operation = schemathesis.openapi.from_dict(openapi)["/journal"]["GET"]
    cases = st.one_of(
        operation.as_strategy(GenerationMode.POSITIVE), operation.as_strategy(GenerationMode.NEGATIVE)
    )

    @fuzzing(80)
    @given(case=cases)
    def check(case) -> None:
        r = case.call(base_url=url, headers=BEARER, timeout=20)
        assert r.status_code in (200, 400), (case.query, r.status_code, r.text)
        assert r.json()["success"] is (r.status_code == 200), r.text

    check()
