"""The chart's fleet (desktops.replicas > 1): a StatefulSet of desktops with a headless Service, the task API
and UI as a Deployment, PostgreSQL bundled or given, KEDA on request, and a `helm test` hook. Rendered by a
real helm and validated against the Kubernetes schemas and KEDA's CRDs; the programs the pods run are the
ones tests/e2e/test_fleet.py runs natively side by side."""

from __future__ import annotations

import base64
from typing import Any
from urllib.parse import urlsplit

import pytest

from testbed.helm import CHART, helm, helm_env_in, render, set_args, validate

FLEET = ["desktops.replicas=3", "api.replicas=2", "postgresql.enabled=true", "desktops.labels={gpu,big}"]
KEDA = [*FLEET, "desktops.autoscaling.enabled=true", "desktops.autoscaling.maxReplicas=8"]
OWN_DATABASE = ["desktops.replicas=2", "database.existingSecret=db", "database.existingSecretKey=url"]
Objects = dict[tuple[str, str], dict[str, Any]]


@pytest.fixture(scope="module")
def helm_env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    return helm_env_in(tmp_path_factory)


def env_of(container: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {e["name"]: e for e in container["env"]}


def pod(objects: Objects, kind: str, name: str) -> dict[str, Any]:
    spec: dict[str, Any] = objects[(kind, name)]["spec"]["template"]["spec"]
    return spec


@pytest.mark.parametrize("settings", [FLEET, KEDA, OWN_DATABASE], ids=["fleet", "keda", "own database"])
def test_lints_strictly_and_renders_valid_objects(helm_env: dict[str, str], settings: list[str]) -> None:
    lint = helm(helm_env, "lint", "--strict", str(CHART), *set_args(settings))
    assert lint.returncode == 0, lint.stdout + lint.stderr
    for obj in render(helm_env, settings).values():
        validate(obj)


def test_desktops_are_a_stateful_set_with_stable_names_and_homes(helm_env: dict[str, str]) -> None:
    objects = render(helm_env, FLEET)
    assert ("Deployment", "desk-deskpilot") not in objects, "no single pod in a fleet"
    assert not [name for kind, name in objects if kind == "PersistentVolumeClaim"]
    desktops = objects[("StatefulSet", "desk-deskpilot-desktop")]["spec"]
    assert desktops["replicas"] == 3 and desktops["serviceName"] == "desk-deskpilot-desktops"
    assert desktops["podManagementPolicy"] == "Parallel"
    (home,) = desktops["volumeClaimTemplates"]
    assert home["metadata"]["name"] == "home" and home["spec"]["resources"]["requests"]["storage"] == "10Gi"
    volumes = {v["name"]: v for v in desktops["template"]["spec"]["volumes"]}
    assert volumes["state"] == {"name": "state", "emptyDir": {}}  # the queue is in PostgreSQL
    headless = objects[("Service", "desk-deskpilot-desktops")]["spec"]
    assert headless["clusterIP"] == "None"
    assert headless["selector"] == desktops["selector"]["matchLabels"]
    assert headless["selector"]["app.kubernetes.io/component"] == "desktop"
    (c,) = desktops["template"]["spec"]["containers"]
    env = env_of(c)
    # each pod is a desktop named after itself, reachable and accepted at its stable DNS name
    assert env["TASKS_DESKTOP_NAME"]["valueFrom"] == {"fieldRef": {"fieldPath": "metadata.name"}}
    names = [e["name"] for e in c["env"]]
    assert names.index("TASKS_DESKTOP_NAME") < names.index("TASKS_DESKTOP_FLEET_URL")  # $(...) needs order
    stable = "$(TASKS_DESKTOP_NAME).desk-deskpilot-desktops.apps.svc"
    assert env["TASKS_DESKTOP_FLEET_URL"]["value"] == f"http://{stable}:9990"
    assert f"{stable}.cluster.local" in env["DESKPILOT_ALLOWED_HOSTS"]["value"].split(",")
    assert env["TASKS_DESKTOP_LABELS"]["value"] == "gpu,big"
    assert env["DATABASE_URL"]["valueFrom"] == {
        "secretKeyRef": {"name": "desk-deskpilot-postgresql", "key": "DATABASE_URL"}
    }
    assert "TASKS_WORKER_ENABLED" not in env  # the desktops' workers run the tasks


def test_the_api_and_ui_are_a_stateless_deployment_behind_the_release_service(
    helm_env: dict[str, str],
) -> None:
    objects = render(helm_env, FLEET)
    api = objects[("Deployment", "desk-deskpilot-api")]["spec"]
    assert api["replicas"] == 2
    spec = api["template"]["spec"]
    containers = {c["name"]: c for c in spec["containers"]}
    assert set(containers) == {"tasks", "ui"}
    tasks, ui = containers["tasks"], containers["ui"]
    assert (
        "deskpilot.tasks.app:create_app" in tasks["command"]
        and "deskpilot.ui.server:create_app" in ui["command"]
    )
    assert env_of(tasks)["TASKS_WORKER_ENABLED"]["value"] == "false"
    assert env_of(tasks)["DATABASE_URL"]["valueFrom"]["secretKeyRef"]["name"] == "desk-deskpilot-postgresql"
    assert env_of(ui)["UI_TASKS_URL"]["value"] == "http://127.0.0.1:9991"
    desktop0 = urlsplit(env_of(ui)["UI_DESKTOP_URL"]["value"])
    assert desktop0.hostname == "desk-deskpilot-desktop-0.desk-deskpilot-desktops.apps.svc"
    for c in (tasks, ui):  # nothing here needs root or a writable image
        assert c["securityContext"]["readOnlyRootFilesystem"] is True
        assert c["securityContext"]["capabilities"] == {"drop": ["ALL"]}
        assert env_of(c)["DESKPILOT_TOKEN"]["valueFrom"]["secretKeyRef"]["name"] == "desk-deskpilot-auth"
    assert spec["securityContext"]["runAsUser"] != 0
    service = objects[("Service", "desk-deskpilot")]["spec"]
    assert service["selector"] == api["selector"]["matchLabels"]
    assert {p["name"] for p in service["ports"]} == {"agent", "ui"}  # desktops: one by one, at their names


def test_bundled_postgresql_keeps_its_password_in_one_secret(helm_env: dict[str, str]) -> None:
    objects = render(helm_env, FLEET)
    secret = objects[("Secret", "desk-deskpilot-postgresql")]["stringData"]
    url = urlsplit(secret["DATABASE_URL"])
    assert (url.scheme, url.username, url.hostname, url.port, url.path) == (
        "postgresql", "deskpilot", "desk-deskpilot-postgresql", 5432, "/deskpilot",
    )  # fmt: skip
    assert url.password == secret["POSTGRES_PASSWORD"] and secret["POSTGRES_PASSWORD"].isalnum()
    db = pod(objects, "StatefulSet", "desk-deskpilot-postgresql")
    (c,) = db["containers"]
    assert env_of(c)["POSTGRES_PASSWORD"]["valueFrom"]["secretKeyRef"]["name"] == "desk-deskpilot-postgresql"
    service = objects[("Service", "desk-deskpilot-postgresql")]["spec"]
    labels = objects[("StatefulSet", "desk-deskpilot-postgresql")]["spec"]["template"]["metadata"]["labels"]
    assert service["selector"].items() <= labels.items()
    release = objects[("Service", "desk-deskpilot")]["spec"]["selector"]
    assert not release.items() <= labels.items(), "the release's Service must not select the database"


def test_keda_scales_the_desktops_on_the_queue(helm_env: dict[str, str]) -> None:
    objects = render(helm_env, KEDA)
    assert "replicas" not in objects[("StatefulSet", "desk-deskpilot-desktop")]["spec"], "KEDA owns it"
    scaled = objects[("ScaledObject", "desk-deskpilot-desktop")]["spec"]
    assert scaled["scaleTargetRef"] == {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "name": "desk-deskpilot-desktop",
    }
    assert (scaled["minReplicaCount"], scaled["maxReplicaCount"]) == (1, 8)
    (trigger,) = scaled["triggers"]
    assert trigger["type"] == "postgresql" and trigger["metadata"]["targetQueryValue"] == "1"
    auth = objects[("TriggerAuthentication", trigger["authenticationRef"]["name"])]["spec"]
    assert auth["secretTargetRef"] == [
        {"parameter": "connection", "name": "desk-deskpilot-postgresql", "key": "DATABASE_URL"}
    ]
    assert not any(kind == "ScaledObject" for kind, _ in render(helm_env, FLEET))  # only when asked


def test_a_database_of_ones_own(helm_env: dict[str, str]) -> None:
    objects = render(helm_env, OWN_DATABASE)
    assert not any("postgresql" in name for _, name in objects)
    for kind, name in (("StatefulSet", "desk-deskpilot-desktop"), ("Deployment", "desk-deskpilot-api")):
        for c in pod(objects, kind, name)["containers"]:
            if c["name"] != "ui":
                assert env_of(c)["DATABASE_URL"]["valueFrom"] == {
                    "secretKeyRef": {"name": "db", "key": "url"}
                }


def test_helm_test_checks_every_desktop_through_the_api(helm_env: dict[str, str]) -> None:
    for settings, expected in ((FLEET, "3"), (KEDA, "1"), ([], "1")):
        hook = render(helm_env, settings)[("Pod", "desk-deskpilot-test-desktops")]
        assert hook["metadata"]["annotations"]["helm.sh/hook"] == "test"
        (c,) = hook["spec"]["containers"]
        assert c["command"][1:] == [
            "/opt/deskpilot/scripts/check-fleet.py",
            "http://desk-deskpilot:9991",
            expected,
        ]
        assert env_of(c)["DESKPILOT_TOKEN"]["valueFrom"]["secretKeyRef"]["name"] == "desk-deskpilot-auth"


@pytest.mark.parametrize(
    ("settings", "reason"),
    [
        (
            ["desktops.replicas=3"],
            "a fleet (desktops.replicas > 1 or autoscaling) shares one queue on PostgreSQL",
        ),
        (["postgresql.enabled=true", "database.url=postgresql://db/x"], "postgresql.enabled runs one"),
        (
            [*FLEET, "ingress.enabled=true", "ingress.mcp=true"],
            "MCP clients reach each desktop at its stable name",
        ),
    ],
    ids=["no database", "two databases", "one MCP route"],
)
def test_a_fleet_that_cannot_work_is_refused_with_the_reason(
    helm_env: dict[str, str], settings: list[str], reason: str
) -> None:
    out = helm(helm_env, "template", "desk", str(CHART), *set_args(settings))
    assert out.returncode != 0 and reason in out.stderr


def test_the_token_secret_is_shared_by_every_pod(helm_env: dict[str, str]) -> None:
    objects = render(helm_env, [*FLEET, "auth.token=one-token"])
    token = objects[("Secret", "desk-deskpilot-auth")]["data"]["DESKPILOT_TOKEN"]
    assert base64.b64decode(token).decode() == "one-token"
    assert "one-token" not in str({k: v for k, v in objects.items() if k[0] != "Secret"})
