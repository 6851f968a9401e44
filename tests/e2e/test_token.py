"""The token when none is given: the appliance that listens beyond loopback (as the image does, on 0.0.0.0)
generates one at its first start, keeps it in the state directory (0600, the task service's user's) and
says where it is without printing it; a restart reuses it. The session's appliance is restarted for this, so
these tests run last (after test_appliance.py and test_secrets.py)."""

from __future__ import annotations

import hashlib
import re
import stat
from collections.abc import Iterator

import httpx
import psutil
import pytest

from testbed.appliance import Appliance

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def generated(appliance: Appliance) -> Iterator[Appliance]:
    """The appliance restarted on 0.0.0.0 without a token; put back on loopback with its own token after."""
    given = appliance.token
    appliance.token = None
    assert not appliance.restart(DESKPILOT_HOST="0.0.0.0"), "the restart left processes behind"
    yield appliance
    appliance.token = given
    assert not appliance.restart(DESKPILOT_HOST=""), "the restart left processes behind"


def token_file(appliance: Appliance) -> str:
    return (appliance.state_dir / "token").read_text()


def test_a_token_is_generated_into_the_state_dir_and_not_printed(generated: Appliance) -> None:
    path = generated.state_dir / "token"
    token = token_file(generated)
    assert re.fullmatch(r"[A-Za-z0-9_-]{43}", token), "32 random bytes, URL-safe"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600 and path.owner() == generated.runs_as()["task-api"]
    log = generated.log.read_text(errors="replace")
    assert token not in log
    assert f"generated one into {path}" in log
    assert f"docker exec <container> cat {path}" in log
    # the task service and the UI hold it, the desktop service its digest
    assert psutil.Process(generated.pid("task-api")).environ()["DESKPILOT_TOKEN"] == token
    assert psutil.Process(generated.pid("ui")).environ()["DESKPILOT_TOKEN"] == token
    desktop = psutil.Process(generated.pid("desktop-api")).environ()
    assert desktop["DESKPILOT_TOKEN_SHA256"].split(",")[0] == hashlib.sha256(token.encode()).hexdigest()
    assert "DESKPILOT_TOKEN" not in desktop


def test_health_answers_without_the_token(generated: Appliance) -> None:
    """The status to anyone; the details (the version first) only with the token."""
    bearer = {"Authorization": f"Bearer {token_file(generated)}"}
    for url in generated.health_urls:
        r = httpx.get(url, timeout=10)
        assert r.status_code == 200 and r.json() == {"status": "ok"}, (url, r.text[:200])
        assert "version" in httpx.get(url, headers=bearer, timeout=10).json(), url


def test_the_ui_refuses_a_request_without_the_token_and_answers_one_with_it(generated: Appliance) -> None:
    url = f"{generated.ui_url}/api/tasks"
    refused = httpx.get(url, timeout=10)
    assert refused.status_code == 401 and refused.headers["www-authenticate"].startswith("Bearer")
    bearer = {"Authorization": f"Bearer {token_file(generated)}"}
    assert httpx.get(url, headers=bearer, timeout=10).status_code == 200


def test_the_desktop_and_the_task_service_refuse_a_request_without_the_token(generated: Appliance) -> None:
    body = {"action": "cursor_position"}
    cursor = httpx.post(f"{generated.desktop_url}/computer-use", json=body, timeout=10)
    assert cursor.status_code == 401, cursor.text[:200]
    tasks = httpx.get(f"{generated.agent_url}/tasks", timeout=10)
    assert tasks.status_code == 401, tasks.text[:200]
    bearer = {"Authorization": f"Bearer {token_file(generated)}"}
    assert httpx.get(f"{generated.agent_url}/tasks", headers=bearer, timeout=10).status_code == 200


def test_a_restart_reuses_the_token(generated: Appliance) -> None:
    token = token_file(generated)
    assert not generated.restart(), "the restart left processes behind"
    assert token_file(generated) == token
    log = generated.log.read_text(errors="replace")
    assert token not in log and "generated one" not in log
    assert f"the token kept in {generated.state_dir / 'token'} (generated at the first start)" in log
    assert psutil.Process(generated.pid("task-api")).environ()["DESKPILOT_TOKEN"] == token
    bearer = {"Authorization": f"Bearer {token}"}
    assert httpx.get(f"{generated.ui_url}/api/tasks", headers=bearer, timeout=10).status_code == 200
