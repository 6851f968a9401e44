"""The Helm chart as the tests see it: a real `helm` (scripts/install-helm.sh), a private Helm home, and the
chart rendered as release `desk` in namespace `apps`; every object it renders validated against its schema:
Kubernetes' own (kubernetes-validate), and for custom kinds their CustomResourceDefinitions in ``crds/``,
copied unchanged (both Apache-2.0): KEDA v2.20.2's (kedacore/keda, config/crd/bases) and the Prometheus
Operator v0.93.0's ServiceMonitor and PrometheusRule (prometheus-operator/prometheus-operator,
example/prometheus-operator-crd)."""

from __future__ import annotations

import os
import re
import subprocess
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema
import kubernetes_validate
import pytest
import yaml

from testbed import ROOT

CHART = ROOT / "helm" / "deskpilot"
HELM = ROOT / ".venv" / "bin" / "helm"
KUBERNETES = "1.30"  # the oldest Kubernetes the chart is checked against; newer ones accept it too
CRDS = Path(__file__).parent / "crds"


def helm_env_in(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """The environment of a helm with a home of its own (a fixture's body)."""
    assert HELM.exists(), "helm is missing: make test installs it (scripts/install-helm.sh .venv/bin)"
    home = tmp_path_factory.mktemp("helm")
    return {**os.environ, **{f"HELM_{k}_HOME": str(home / k.lower()) for k in ("CACHE", "CONFIG", "DATA")}}


def helm(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(HELM), *args], env=env, capture_output=True, text=True, timeout=60)


def set_args(settings: list[str]) -> list[str]:
    return [a for s in settings for a in ("--set", s)]


def notes(env: dict[str, str], settings: list[str]) -> str:
    """NOTES.txt as `helm install` prints it (a client-side dry run: no cluster)."""
    out = helm(
        env, "install", "desk", str(CHART), "--namespace", "apps", "--dry-run=client", *set_args(settings)
    )
    assert out.returncode == 0, out.stderr
    return out.stdout.split("NOTES:", 1)[1]


def render(env: dict[str, str], settings: list[str]) -> dict[tuple[str, str], dict[str, Any]]:
    """Render the chart as release `desk` in namespace `apps`: {(kind, name): object}."""
    out = helm(env, "template", "desk", str(CHART), "--namespace", "apps", *set_args(settings))
    assert out.returncode == 0, out.stderr
    return {(d["kind"], d["metadata"]["name"]): d for d in yaml.safe_load_all(out.stdout) if d}


def strict(schema: Any) -> Any:
    """``schema`` refusing unknown fields, as kubernetes-validate's strict mode does for Kubernetes' kinds (a
    structural schema would prune them silently: a misspelt field must fail here instead). Its patterns are
    Go regular expressions: one with flags after its ``^`` (``^(?i)...``), which Python refuses, gets them
    first."""
    if isinstance(schema, list):
        return [strict(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out = {k: strict(v) for k, v in schema.items()}
    if isinstance(out.get("pattern"), str):
        out["pattern"] = re.sub(r"^\^(\(\?[a-z]+\))", r"\1^", out["pattern"])
    if (
        "properties" in out
        and "additionalProperties" not in out
        and not out.get("x-kubernetes-preserve-unknown-fields")
    ):
        out["additionalProperties"] = False
    return out


@cache
def crd_schema(group: str, kind: str, version: str) -> dict[str, Any]:
    """The OpenAPI schema of a custom resource, from its vendored CustomResourceDefinition (strict)."""
    for path in CRDS.glob(f"{group}_*.yaml"):
        crd = yaml.safe_load(path.read_text())
        if crd["spec"]["names"]["kind"] == kind:
            (found,) = [v for v in crd["spec"]["versions"] if v["name"] == version]
            schema: dict[str, Any] = strict(found["schema"]["openAPIV3Schema"])
            return schema
    raise LookupError(f"no CustomResourceDefinition for {kind}.{group}/{version} in {CRDS}")


def validate(obj: dict[str, Any]) -> None:
    """Raise unless ``obj`` is a valid object of its kind (a Kubernetes kind, or a vendored custom one)."""
    group, _, version = obj["apiVersion"].rpartition("/")
    if any(CRDS.glob(f"{group}_*.yaml")):
        jsonschema.validate(obj, crd_schema(group, obj["kind"], version))
        # a CRD's schema leaves metadata to the API server: check it as any object's (labels are strings ...)
        stub = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": obj["metadata"]}
        kubernetes_validate.validate(stub, KUBERNETES, strict=True)
    else:
        kubernetes_validate.validate(obj, KUBERNETES, strict=True)
