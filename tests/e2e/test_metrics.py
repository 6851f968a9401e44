"""A real Prometheus scrapes the booted appliance's three services with its token, as
docs/operations.md#metrics says to, and answers queries on what they export after a few real actions."""

from __future__ import annotations

import httpx
import pytest

from testbed.appliance import Appliance
from testbed.prometheus import prometheus

pytestmark = pytest.mark.e2e


def test_prometheus_scrapes_the_appliance(appliance: Appliance) -> None:
    assert appliance.token
    jobs = {"desktop": appliance.desktop_url, "tasks": appliance.agent_url, "ui": appliance.ui_url}
    for url in jobs.values():  # the token is what opens them
        assert httpx.get(f"{url}/metrics", timeout=10).status_code == 401
    with prometheus(jobs, appliance.token) as server:
        for _ in range(3):
            assert appliance.computer("cursor_position").status_code == 200
        assert appliance.computer("screenshot").status_code == 200
        up = server.wait('count(up{job=~"desktop|tasks|ui"} == 1) == 3')
        assert up, server.targets()
        counted = server.wait('deskpilot_action_duration_seconds_count{action="cursor_position"} >= 3')
        assert counted[0]["metric"]["job"] == "desktop"
        assert server.wait('deskpilot_screenshot_bytes_count{format="png"} >= 1')
        assert server.wait("deskpilot_display_up == 1")
        assert server.wait('deskpilot_capture_path{path="shm"} == 1')
        assert server.wait('deskpilot_desktops{state=~"idle|running"} == 1')
        assert server.wait('sum(deskpilot_tasks{job="tasks"}) >= 0')
        assert server.wait('deskpilot_http_requests_total{job="ui",route="/metrics",code="200"} >= 1')
        assert server.wait('process_resident_memory_bytes{job="desktop"} > 0')
