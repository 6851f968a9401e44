"""The chart's fleet pods, run from the image as the chart renders them: a desktop (the appliance with the
StatefulSet's fleet variables), the API Deployment's two containers with their commands, user, read-only
root and no capabilities, and the `helm test` hook's check, all on one PostgreSQL (the host's, over the
host network) with the scripted model. No cluster runs here: Docker plays the kubelet, and helm the chart."""

from __future__ import annotations

import secrets
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from deskpilot.client.container import ImageAppliance, docker
from deskpilot.scripted import Plan, ScriptedModel
from testbed.appliance import model_settings
from testbed.helm import helm_env_in, render
from testbed.net import free_port
from testbed.postgres import PostgresServer

pytestmark = [pytest.mark.image, pytest.mark.timeout(1200)]

DESKTOP = "desk-deskpilot-desktop-0"
DONE = Plan.model_validate(
    {
        "tasks": [
            {
                "match": ".",
                "steps": [{"tool": "set_task_status", "args": {"status": "completed", "description": "ok"}}],
            }
        ]
    }
)


@pytest.fixture(scope="module")
def chart(tmp_path_factory: pytest.TempPathFactory) -> dict[tuple[str, str], dict[str, Any]]:
    return render(helm_env_in(tmp_path_factory), ["desktops.replicas=3", "postgresql.enabled=true"])


@pytest.fixture(scope="module")
def database() -> Iterator[str]:
    pg = PostgresServer().start()
    try:
        yield pg.create_database()
    finally:
        pg.stop()


def pod_run(
    image: str, name: str, c: dict[str, Any], pod: dict[str, Any], env: dict[str, str], ports: dict[str, int]
) -> None:
    """``docker run`` one of the chart's containers as a kubelet would: its command (the ports moved to free
    ones: the host's network is shared), its plain values and the Secrets' ones given, its user and security
    context, emptyDirs as tmpfs."""
    command = list(c["command"])
    command[command.index("--port") + 1] = str(ports[c["name"]])
    values = {e["name"]: e["value"] for e in c["env"] if "value" in e} | env
    security = c["securityContext"]
    user = f"{pod['securityContext']['runAsUser']}:{pod['securityContext']['runAsGroup']}"
    options = ["--user", user, "--cap-drop", "ALL", "--security-opt", "no-new-privileges"]
    options += ["--read-only"] if security["readOnlyRootFilesystem"] else []
    options += [
        arg for m in c["volumeMounts"] for arg in ("--tmpfs", f"{m['mountPath']}:uid=65534,gid=65534")
    ]
    settings = [arg for k, v in values.items() for arg in ("-e", f"{k}={v}")]
    docker("run", "-d", "--rm", "--name", name, "--network", "host", *options, *settings,
           "--entrypoint", command[0], image, *command[1:])  # fmt: skip


def wait_ok(url: str, headers: dict[str, str] | None = None, timeout: float = 60) -> httpx.Response:
    deadline = time.monotonic() + timeout
    while True:
        try:
            r = httpx.get(url, headers=headers, timeout=5)
            if r.status_code == 200:
                return r
        except httpx.HTTPError:
            pass
        assert time.monotonic() < deadline, f"{url} did not answer 200 in {timeout} s"
        time.sleep(0.5)


def test_the_fleets_pods_run_from_the_image(
    image: str, chart: dict[tuple[str, str], Any], database: str
) -> None:
    token = secrets.token_urlsafe(32)
    names = [f"deskpilot-fleet-{secrets.token_hex(4)}-{part}" for part in ("tasks", "ui", "check")]
    with ScriptedModel(plan=DONE).serve() as model:
        desktop = ImageAppliance(image, token=token)
        statefulset = chart[("StatefulSet", "desk-deskpilot-desktop")]["spec"]["template"]["spec"]
        (appliance,) = statefulset["containers"]
        fleet_env = {e["name"] for e in appliance["env"]}
        assert {"TASKS_DESKTOP_NAME", "TASKS_DESKTOP_FLEET_URL", "DATABASE_URL"} <= fleet_env
        desktop.env = model_settings(model) | {
            "DATABASE_URL": database,
            "TASKS_DESKTOP_NAME": DESKTOP,  # the pod's name, from metadata.name
            "TASKS_DESKTOP_FLEET_URL": f"http://127.0.0.1:{desktop.desktop_port}",  # its stable name, here
        }
        api_pod = chart[("Deployment", "desk-deskpilot-api")]["spec"]["template"]["spec"]
        containers = {c["name"]: c for c in api_pod["containers"]}
        ports = {"tasks": free_port(), "ui": free_port()}
        tasks_url, ui_url = f"http://127.0.0.1:{ports['tasks']}", f"http://127.0.0.1:{ports['ui']}"
        bearer = {"Authorization": f"Bearer {token}"}
        try:
            desktop.start()
            pod_run(
                image,
                names[0],
                containers["tasks"],
                api_pod,
                {"DATABASE_URL": database, "DESKPILOT_TOKEN": token},
                ports,
            )
            ui_env = {
                "DESKPILOT_TOKEN": token,
                "UI_TASKS_URL": tasks_url,
                "UI_DESKTOP_URL": desktop.desktop_url,
            }
            pod_run(image, names[1], containers["ui"], api_pod, ui_env, ports)
            health = wait_ok(f"{tasks_url}/health", bearer).json()  # the details: with the token
            assert health["worker"] is False and health["database"] == "postgresql"
            wait_ok(f"{ui_url}/health")
            desktop.wait_ready(timeout=120)

            # the hook's pod: its command against the API container, as user 65534 on a read-only root
            hook = chart[("Pod", "desk-deskpilot-test-desktops")]["spec"]
            (check,) = hook["containers"]
            confined = [
                "--user",
                "65534",
                "--read-only",
                "--cap-drop",
                "ALL",
                "-e",
                f"DESKPILOT_TOKEN={token}",
            ]
            out = docker(
                "run", "--rm", "--name", names[2], "--network", "host", *confined,
                "--entrypoint", check["command"][0], image, check["command"][1], tasks_url, "1", timeout=180,
            )  # fmt: skip
            assert out.strip().startswith(f"{DESKTOP}: idle")

            # a task through the API pod runs on the desktop pod; the UI pod shows and proxies that desktop
            task = httpx.post(
                f"{tasks_url}/tasks", json={"description": "hello fleet"}, headers=bearer
            ).json()
            deadline = time.monotonic() + 60
            while (t := httpx.get(f"{tasks_url}/tasks/{task['id']}", headers=bearer).json())[
                "status"
            ] != "COMPLETED":
                assert time.monotonic() < deadline and t["status"] in ("PENDING", "IN_PROGRESS"), t
                time.sleep(0.3)
            assert t["executedOn"] == DESKTOP
            page = httpx.get(f"{ui_url}/desktops", headers=bearer)
            assert page.status_code == 200 and f'data-desktop="{DESKTOP}"' in page.text
            rfb = httpx.get(f"{ui_url}/desktops/{DESKTOP}/vnc/core/rfb.js", headers=bearer)
            assert rfb.status_code == 200 and "export default" in rfb.text
        finally:
            for name in names:
                docker("rm", "-f", name, check=False)
            desktop.shutdown()
