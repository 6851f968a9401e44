"""The Helm chart (helm/deskpilot): real `helm lint --strict` and `helm template`, and every rendered object
validated against the Kubernetes schemas (kubernetes-validate). No cluster can run here, so what the pod
does is proven by the e2e tests of the same image layout (scripts/appliance.sh, supervisord.conf)."""

from __future__ import annotations

import base64
import re
from typing import Any

import pytest
import yaml

from deskpilot import __version__
from testbed.helm import CHART, helm, helm_env_in, notes, render, set_args, validate

SCENARIOS: dict[str, list[str]] = {
    "defaults": [],
    "ingress, MCP, keys and PostgreSQL as values": [
        "ingress.enabled=true", "ingress.mcp=true", "ingress.className=nginx",
        "ingress.tls[0].secretName=desk-tls", "ingress.tls[0].hosts[0]=deskpilot.example.com",
        "llm.apiKeys.ANTHROPIC_API_KEY=sk-test", "database.url=postgresql://u:p@db/deskpilot",
        "llm.model=anthropic/claude-sonnet-4-6", "auth.token=a-token-given-as-a-value",
        "allowedHosts[0]=10.0.0.5", "mcpAllowedHosts[0]=desk.internal",
    ],
    "secrets and claims of one's own, no persistence for the home": [
        "llm.existingSecret=llm-keys", "database.existingSecret=db", "llm.proxyUrl=http://litellm:4000",
        "persistence.state.existingClaim=desk-state", "persistence.home.enabled=false",
        "extraEnv[0].name=AGENT_MAX_STEPS", "extraEnv[0].value=200",
        "auth.existingSecret=desk-token", "auth.existingSecretKey=token",
    ],
}  # fmt: skip


def container(objects: dict[tuple[str, str], dict[str, Any]]) -> dict[str, Any]:
    (pod,) = [o["spec"]["template"]["spec"] for (kind, _), o in objects.items() if kind == "Deployment"]
    (c,) = pod["containers"]
    return c


@pytest.fixture(scope="module")
def helm_env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    return helm_env_in(tmp_path_factory)


@pytest.mark.parametrize("settings", SCENARIOS.values(), ids=SCENARIOS.keys())
def test_lints_strictly_and_renders_valid_kubernetes_objects(
    helm_env: dict[str, str], settings: list[str]
) -> None:
    lint = helm(helm_env, "lint", "--strict", str(CHART), *set_args(settings))
    assert lint.returncode == 0, lint.stdout + lint.stderr
    for obj in render(helm_env, settings).values():
        validate(obj)


def test_defaults_one_desktop_with_its_volumes_ports_and_probes(helm_env: dict[str, str]) -> None:
    objects = render(helm_env, [])
    deployment = objects[("Deployment", "desk-deskpilot")]
    assert deployment["spec"]["replicas"] == 1 and deployment["spec"]["strategy"]["type"] == "Recreate"
    c = container(objects)
    assert c["image"] == f"deskpilot:{__version__}"
    assert {p["name"]: p["containerPort"] for p in c["ports"]} == {"desktop": 9990, "agent": 9991, "ui": 9992}
    for probe, path, port in (
        ("startupProbe", "/health", "agent"),
        ("readinessProbe", "/health", "desktop"),  # 503 while the display is degraded
        ("livenessProbe", "/health/live", "desktop"),  # a lost display must not restart the pod
    ):
        assert c[probe]["httpGet"] == {"path": path, "port": port}, probe
    assert {m["mountPath"] for m in c["volumeMounts"]} == {"/home/user", "/var/lib/deskpilot", "/dev/shm"}
    volumes = {v["name"]: v for v in deployment["spec"]["template"]["spec"]["volumes"]}
    assert volumes["shm"]["emptyDir"]["medium"] == "Memory"
    for name in ("home", "state"):
        claim = objects[("PersistentVolumeClaim", f"desk-deskpilot-{name}")]
        assert volumes[name]["persistentVolumeClaim"]["claimName"] == claim["metadata"]["name"]
        assert claim["metadata"]["annotations"]["helm.sh/resource-policy"] == "keep"
    service = objects[("Service", "desk-deskpilot")]
    assert {p["name"]: (p["port"], p["targetPort"]) for p in service["spec"]["ports"]} == {
        "desktop": (9990, "desktop"), "agent": (9991, "agent"), "ui": (9992, "ui"),
    }  # fmt: skip
    assert not any(kind == "Ingress" for kind, _ in objects)
    assert [name for kind, name in objects if kind == "Secret"] == ["desk-deskpilot-auth"]  # the token's
    # The services' Host check accepts the Service's names, so in-cluster clients work out of the box
    env = {e["name"]: e.get("value") for e in c["env"]}
    service_names = ["desk-deskpilot", "desk-deskpilot.apps", "desk-deskpilot.apps.svc"]
    assert env["DESKPILOT_ALLOWED_HOSTS"].split(",") == [
        *service_names,
        "desk-deskpilot.apps.svc.cluster.local",
    ]
    assert "DESKTOP_MCP_ALLOWED_HOSTS" not in env


def test_ingress_serves_the_ui_and_optionally_mcp_and_keys_live_in_a_secret(helm_env: dict[str, str]) -> None:
    objects = render(helm_env, SCENARIOS["ingress, MCP, keys and PostgreSQL as values"])
    (rule,) = objects[("Ingress", "desk-deskpilot")]["spec"]["rules"]
    assert rule["host"] == "deskpilot.example.com"
    routes = {p["path"]: p["backend"]["service"]["port"]["name"] for p in rule["http"]["paths"]}
    assert routes == {"/mcp": "desktop", "/": "ui"}
    secret = objects[("Secret", "desk-deskpilot")]["stringData"]
    assert secret == {"ANTHROPIC_API_KEY": "sk-test", "DATABASE_URL": "postgresql://u:p@db/deskpilot"}
    c = container(objects)
    assert c["envFrom"] == [{"secretRef": {"name": "desk-deskpilot"}}]
    env = {e["name"]: e.get("value") for e in c["env"]}
    assert env["AGENT_MODEL"] == "anthropic/claude-sonnet-4-6"
    hosts = env["DESKPILOT_ALLOWED_HOSTS"].split(",")
    assert hosts[-3:] == [
        "deskpilot.example.com",
        "10.0.0.5",
        "desk.internal",
    ]  # and mcpAllowedHosts, deprecated
    assert "sk-test" not in str(c), "keys reach the pod through the Secret only"
    annotations = objects[("Deployment", "desk-deskpilot")]["spec"]["template"]["metadata"]["annotations"]
    assert len(annotations["checksum/secret"]) == 64  # a changed key restarts the pod


def test_secrets_and_claims_of_ones_own(helm_env: dict[str, str]) -> None:
    objects = render(helm_env, SCENARIOS["secrets and claims of one's own, no persistence for the home"])
    assert not any(kind in ("Secret", "PersistentVolumeClaim") for kind, _ in objects)
    c = container(objects)
    assert c["envFrom"] == [{"secretRef": {"name": "llm-keys"}}]
    env = {e["name"]: e for e in c["env"]}
    assert env["DATABASE_URL"]["valueFrom"] == {"secretKeyRef": {"name": "db", "key": "DATABASE_URL"}}
    assert env["DESKPILOT_TOKEN"]["valueFrom"] == {"secretKeyRef": {"name": "desk-token", "key": "token"}}
    assert env["AGENT_LLM_PROXY_URL"]["value"] == "http://litellm:4000"
    assert env["AGENT_MAX_STEPS"]["value"] == "200"
    volumes = {
        v["name"]: v for v in objects[("Deployment", "desk-deskpilot")]["spec"]["template"]["spec"]["volumes"]
    }
    assert volumes["home"] == {"name": "home", "emptyDir": {}}
    assert volumes["state"]["persistentVolumeClaim"] == {"claimName": "desk-state"}


@pytest.mark.parametrize(
    ("settings", "reason"),
    [
        (
            ["database.url=postgresql://db/x", "database.existingSecret=db"],
            "database: set url or existingSecret",
        ),
        (["auth.token=x", "auth.existingSecret=t"], "auth: set token or existingSecret, not both"),
    ],
)
def test_a_secret_given_twice_is_refused_with_the_reason(
    helm_env: dict[str, str], settings: list[str], reason: str
) -> None:
    out = helm(helm_env, "template", "desk", str(CHART), *set_args(settings))
    assert out.returncode != 0
    assert reason in out.stderr


# ------------------------------------------------------------------------------------------------ the token

READ_TOKEN = "kubectl -n apps get secret {name} -o jsonpath='{{.data.{key}}}' | base64 -d"


def token_env(objects: dict[tuple[str, str], dict[str, Any]]) -> dict[str, Any]:
    (env,) = [e for e in container(objects)["env"] if e["name"] == "DESKPILOT_TOKEN"]
    return dict(env)


def test_without_a_token_the_chart_generates_one_into_a_secret_of_its_own(helm_env: dict[str, str]) -> None:
    objects = render(helm_env, [])
    secret = objects[("Secret", "desk-deskpilot-auth")]
    assert set(secret["data"]) == {"DESKPILOT_TOKEN"} and "stringData" not in secret
    token = base64.b64decode(secret["data"]["DESKPILOT_TOKEN"]).decode()
    assert re.fullmatch(r"[A-Za-z0-9]{43}", token), token  # ~256 bits
    assert token_env(objects)["valueFrom"] == {
        "secretKeyRef": {"name": "desk-deskpilot-auth", "key": "DESKPILOT_TOKEN"}
    }
    # `helm template` cannot look the Secret up, so each render makes a new one; an install or upgrade
    # against a cluster finds the Secret and keeps its token (templates/auth-secret.yaml)
    again = render(helm_env, [])[("Secret", "desk-deskpilot-auth")]["data"]["DESKPILOT_TOKEN"]
    assert again != secret["data"]["DESKPILOT_TOKEN"]
    text = notes(helm_env, [])
    assert READ_TOKEN.format(name="desk-deskpilot-auth", key="DESKPILOT_TOKEN") in text
    assert "generated at the first install" in text


def test_a_token_given_as_a_value_lives_in_the_charts_secret_only(helm_env: dict[str, str]) -> None:
    objects = render(helm_env, ["auth.token=a-token-given-as-a-value"])
    secret = objects[("Secret", "desk-deskpilot-auth")]["data"]["DESKPILOT_TOKEN"]
    assert base64.b64decode(secret).decode() == "a-token-given-as-a-value"
    assert token_env(objects)["valueFrom"]["secretKeyRef"]["name"] == "desk-deskpilot-auth"
    assert "a-token-given-as-a-value" not in str(objects[("Deployment", "desk-deskpilot")])
    annotations = objects[("Deployment", "desk-deskpilot")]["spec"]["template"]["metadata"]["annotations"]
    other = render(helm_env, ["auth.token=another-token"])[("Deployment", "desk-deskpilot")]
    assert (
        other["spec"]["template"]["metadata"]["annotations"]["checksum/auth"] != annotations["checksum/auth"]
    )
    text = notes(helm_env, ["auth.token=a-token-given-as-a-value"])
    assert READ_TOKEN.format(name="desk-deskpilot-auth", key="DESKPILOT_TOKEN") in text
    assert "a-token-given-as-a-value" not in text and "generated" not in text


def test_a_token_in_a_secret_of_ones_own(helm_env: dict[str, str]) -> None:
    settings = ["auth.existingSecret=desk-token", "auth.existingSecretKey=token"]
    objects = render(helm_env, settings)
    assert not [name for kind, name in objects if kind == "Secret"]
    assert token_env(objects)["valueFrom"] == {"secretKeyRef": {"name": "desk-token", "key": "token"}}
    assert READ_TOKEN.format(name="desk-token", key="token") in notes(helm_env, settings)


def test_chart_app_version_is_the_apps_version() -> None:
    chart = yaml.safe_load((CHART / "Chart.yaml").read_text())
    assert chart["appVersion"] == __version__
