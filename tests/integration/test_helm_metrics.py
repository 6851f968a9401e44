"""The chart's observability objects (metrics.*): ServiceMonitors scraping each service's /metrics with the
token, the Grafana dashboard's ConfigMap, the PrometheusRule's alerts, and KEDA scaling on a Prometheus query.
Rendered by a real helm and validated against the Prometheus Operator's and KEDA's CRDs; the rules checked and
their alerts exercised on synthetic series by a real promtool (Debian's prometheus package,
scripts/install-system.sh --test); the dashboard's queries parsed by the same promtool and held to the metric
names the services export (fixed by issue #29)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from testbed.helm import CHART, helm, helm_env_in, notes, render, set_args, validate

METRICS = [f"metrics.{part}.enabled=true" for part in ("serviceMonitor", "dashboard", "rules")]
FLEET = ["desktops.replicas=3", "postgresql.enabled=true"]
PROMETHEUS_KEDA = [
    *FLEET, "desktops.autoscaling.enabled=true", "desktops.autoscaling.trigger=prometheus",
    "desktops.autoscaling.prometheus.serverAddress=http://prometheus-operated.monitoring.svc:9090",
]  # fmt: skip
OWN_TOKEN = ["auth.existingSecret=desk-token", "auth.existingSecretKey=token"]
SCENARIOS: dict[str, list[str]] = {
    "one desktop": METRICS,
    "a fleet": [*FLEET, *METRICS],
    "a fleet scaled on Prometheus": [*PROMETHEUS_KEDA, *METRICS],
    "a token of ones own, labels and interval": [
        *METRICS, *OWN_TOKEN, "metrics.serviceMonitor.labels.release=kube-prometheus-stack",
        "metrics.serviceMonitor.interval=15s", "metrics.rules.labels.release=kube-prometheus-stack",
        "metrics.dashboard.namespace=monitoring", "metrics.dashboard.annotations.grafana_folder=Deskpilot",
    ],
}  # fmt: skip
KINDS = {"desktop": "desktop", "tasks": "agent", "ui": "ui"}  # the ServiceMonitors' kinds and their ports

# The families the services export, by kind (names fixed by issue #29, so that dashboards can rely on them)
HISTOGRAMS = {
    "deskpilot_action_duration_seconds", "deskpilot_screenshot_bytes", "deskpilot_settle_seconds",
    "deskpilot_task_duration_seconds", "deskpilot_queue_wait_seconds",
    "deskpilot_model_call_duration_seconds",
}  # fmt: skip
OTHERS = {
    "deskpilot_display_up", "deskpilot_tasks", "deskpilot_ws_clients", "deskpilot_desktops",
    "deskpilot_model_tokens_total", "deskpilot_http_requests_total",
}  # fmt: skip
METRIC_NAMES = OTHERS | {h + s for h in HISTOGRAMS for s in ("_bucket", "_count", "_sum")}
# The golden signals the dashboard must show (issue #29, the chart's part)
GOLDEN = {
    "deskpilot_tasks", "deskpilot_queue_wait_seconds_bucket", "deskpilot_task_duration_seconds_bucket",
    "deskpilot_model_call_duration_seconds_bucket", "deskpilot_model_call_duration_seconds_count",
    "deskpilot_model_tokens_total", "deskpilot_action_duration_seconds_bucket",
    "deskpilot_settle_seconds_bucket", "deskpilot_display_up", "deskpilot_desktops", "deskpilot_ws_clients",
    "deskpilot_http_requests_total",
}  # fmt: skip
Objects = dict[tuple[str, str], dict[str, Any]]


@pytest.fixture(scope="module")
def helm_env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    return helm_env_in(tmp_path_factory)


@pytest.fixture(scope="module")
def promtool() -> str:
    found = shutil.which("promtool")
    assert found, "promtool is missing: scripts/install-system.sh --test installs it (Debian's prometheus)"
    return found


def run(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, cwd=cwd, capture_output=True, text=True, timeout=60)


def of_kind(objects: Objects, kind: str) -> dict[str, dict[str, Any]]:
    return {name: o for (k, name), o in objects.items() if k == kind}


@pytest.mark.parametrize("settings", SCENARIOS.values(), ids=SCENARIOS.keys())
def test_lints_strictly_and_renders_valid_objects(helm_env: dict[str, str], settings: list[str]) -> None:
    lint = helm(helm_env, "lint", "--strict", str(CHART), *set_args(settings))
    assert lint.returncode == 0, lint.stdout + lint.stderr
    objects = render(helm_env, settings)
    for obj in objects.values():
        validate(obj)
    assert {kind for kind, _ in objects} >= {"ServiceMonitor", "PrometheusRule", "ConfigMap"}


@pytest.mark.parametrize("settings", [[], FLEET, [*FLEET, "desktops.autoscaling.enabled=true"]])
def test_nothing_is_rendered_unless_asked(helm_env: dict[str, str], settings: list[str]) -> None:
    objects = render(helm_env, settings)
    assert not {kind for kind, _ in objects} & {"ServiceMonitor", "PrometheusRule", "ConfigMap"}
    assert "Metrics:" not in notes(helm_env, settings)
    one = render(helm_env, [*settings, "metrics.rules.enabled=true"])  # each on its own
    assert {kind for kind, _ in one} - {kind for kind, _ in objects} == {"PrometheusRule"}


def test_a_misspelt_field_of_a_custom_object_is_refused() -> None:
    """The CRDs' schemas are checked strictly (a structural schema would drop an unknown field silently)."""
    monitor: dict[str, Any] = {
        "apiVersion": "monitoring.coreos.com/v1", "kind": "ServiceMonitor", "metadata": {"name": "m"},
        "spec": {"selector": {}, "endpoints": [{"port": "ui", "authorisation": {"type": "Bearer"}}]},
    }  # fmt: skip
    with pytest.raises(jsonschema.ValidationError, match="authorisation"):
        validate(monitor)
    monitor["spec"]["endpoints"][0] = {"port": "ui", "authorization": {"type": "Bearer"}}
    validate(monitor)
    monitor["metadata"]["labels"] = {"release": 1}  # metadata: checked as any object's
    with pytest.raises(jsonschema.ValidationError, match="1 is not of type 'string'"):
        validate(monitor)


# ---------------------------------------------------------------------------------------- the ServiceMonitors


def scraped(objects: Objects, monitor: dict[str, Any]) -> set[tuple[str, str]]:
    """(Service, workload) pairs whose pods the monitor's endpoint reaches: the Services it selects that have
    its port, and the workloads those Services select whose container has the port's target."""
    spec = monitor["spec"]
    (endpoint,) = spec["endpoints"]
    assert spec["namespaceSelector"] == {"matchNames": ["apps"]}
    reached = set()
    for name, service in of_kind(objects, "Service").items():
        if not spec["selector"]["matchLabels"].items() <= service["metadata"]["labels"].items():
            continue
        ports = {p["name"]: p["targetPort"] for p in service["spec"]["ports"]}
        if endpoint["port"] not in ports:
            continue  # the operator keeps only the endpoints of that port
        for kind in ("Deployment", "StatefulSet"):
            for workload_name, workload in of_kind(objects, kind).items():
                template = workload["spec"]["template"]
                if service["spec"]["selector"].items() <= template["metadata"]["labels"].items():
                    container_ports = {p["name"] for c in template["spec"]["containers"] for p in c["ports"]}
                    assert ports[endpoint["port"]] in container_ports, (name, workload_name)
                    reached.add((name, workload_name))
    return reached


@pytest.mark.parametrize(
    ("settings", "expected"),
    [
        ([], {kind: {("desk-deskpilot", "desk-deskpilot")} for kind in KINDS}),
        (
            FLEET,
            {
                "desktop": {("desk-deskpilot-desktops", "desk-deskpilot-desktop")},
                # the API's task service, and each desktop's (its worker runs the agent loop: models, tasks)
                "tasks": {
                    ("desk-deskpilot", "desk-deskpilot-api"),
                    ("desk-deskpilot-desktops", "desk-deskpilot-desktop"),
                },
                "ui": {("desk-deskpilot", "desk-deskpilot-api")},
            },
        ),
    ],
    ids=["one desktop", "a fleet"],
)
def test_a_service_monitor_per_kind_scrapes_its_services_metrics(
    helm_env: dict[str, str], settings: list[str], expected: dict[str, set[tuple[str, str]]]
) -> None:
    objects = render(helm_env, [*settings, "metrics.serviceMonitor.enabled=true"])
    monitors = of_kind(objects, "ServiceMonitor")
    assert set(monitors) == {f"desk-deskpilot-{kind}" for kind in KINDS}
    for kind, port in KINDS.items():
        monitor = monitors[f"desk-deskpilot-{kind}"]
        (endpoint,) = monitor["spec"]["endpoints"]
        assert (endpoint["port"], endpoint["path"], endpoint["scheme"]) == (port, "/metrics", "http")
        assert (endpoint["interval"], endpoint["scrapeTimeout"]) == ("30s", "10s")
        # one job per kind, which the dashboard and the alerts select on
        assert endpoint["relabelings"] == [
            {"action": "replace", "targetLabel": "job", "replacement": f"desk-deskpilot-{kind}"}
        ]
        assert scraped(objects, monitor) == expected[kind], kind


@pytest.mark.parametrize(
    ("settings", "secret"),
    [
        ([], {"name": "desk-deskpilot-auth", "key": "DESKPILOT_TOKEN"}),  # generated
        (["auth.token=a-token"], {"name": "desk-deskpilot-auth", "key": "DESKPILOT_TOKEN"}),  # as a value
        (OWN_TOKEN, {"name": "desk-token", "key": "token"}),
        ([*FLEET, *OWN_TOKEN], {"name": "desk-token", "key": "token"}),
    ],
    ids=["generated", "as a value", "a Secret of ones own", "a fleet with a Secret of ones own"],
)
def test_the_bearer_is_the_token_from_the_pods_secret(
    helm_env: dict[str, str], settings: list[str], secret: dict[str, str]
) -> None:
    objects = render(helm_env, [*settings, "metrics.serviceMonitor.enabled=true"])
    for monitor in of_kind(objects, "ServiceMonitor").values():
        (endpoint,) = monitor["spec"]["endpoints"]
        assert endpoint["authorization"] == {"type": "Bearer", "credentials": secret}
    # the very Secret and key the services read DESKPILOT_TOKEN from
    for kind in ("Deployment", "StatefulSet"):
        for workload in of_kind(objects, kind).values():
            for c in workload["spec"]["template"]["spec"]["containers"]:
                for env in c.get("env", []):
                    if env["name"] == "DESKPILOT_TOKEN":
                        assert env["valueFrom"]["secretKeyRef"] == secret
    if "auth.token=a-token" in settings:
        assert "a-token" not in str(of_kind(objects, "ServiceMonitor"))


def test_service_monitors_carry_the_labels_and_interval_asked_for(helm_env: dict[str, str]) -> None:
    objects = render(helm_env, SCENARIOS["a token of ones own, labels and interval"])
    for monitor in of_kind(objects, "ServiceMonitor").values():
        assert monitor["metadata"]["labels"]["release"] == "kube-prometheus-stack"
        assert monitor["metadata"]["labels"]["app.kubernetes.io/instance"] == "desk"
        (endpoint,) = monitor["spec"]["endpoints"]
        assert endpoint["interval"] == "15s"
    rule = objects[("PrometheusRule", "desk-deskpilot")]
    assert rule["metadata"]["labels"]["release"] == "kube-prometheus-stack"


# ---------------------------------------------------------------------------------------------- the dashboard

PROMQL_WORDS = {"by", "without", "on", "ignoring", "group_left", "group_right", "bool", "offset"}
PROMQL_WORDS |= {"and", "or", "unless"}


def metric_names(expr: str) -> set[str]:
    """The metric names a PromQL expression reads (its identifiers that are neither functions, keywords,
    labels nor durations)."""
    text = re.sub(r'"(?:[^"\\]|\\.)*"', '""', expr)
    text = re.sub(r"\{[^}]*\}", "", text)  # label matchers
    text = re.sub(r"\[[^\]]*\]", "", text)  # ranges
    text = re.sub(r"\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", "", text)  # label lists
    names = set()
    for m in re.finditer(r"(?<![\w.$])[A-Za-z_:][\w:]*", text):
        if m.group() not in PROMQL_WORDS and not text[m.end() :].lstrip().startswith("("):
            names.add(m.group())
    return names


def test_metric_names_reads_names_not_functions_or_labels() -> None:
    expr = 'histogram_quantile(0.95, sum by (le, model) (rate(a_bucket{job="x", le!="1"}[$__rate_interval])))'
    assert metric_names(expr) == {"a_bucket"}
    assert metric_names("max by (status) (b) > 0 unless on (namespace) c and up") == {"b", "c", "up"}


def dashboard_of(objects: Objects) -> tuple[dict[str, Any], dict[str, Any]]:
    (configmap,) = of_kind(objects, "ConfigMap").values()
    (key,) = configmap["data"]
    assert key == "apps-desk-deskpilot.json"  # one file per release in the sidecar's folder
    return configmap, json.loads(configmap["data"][key])


def panels(dashboard: dict[str, Any]) -> list[dict[str, Any]]:
    return [p for p in dashboard["panels"] if p["type"] != "row"]


def grafana_free(expr: str) -> str:
    """``expr`` with Grafana's variables replaced, as Grafana sends it to Prometheus."""
    for variable, value in (
        ("$__rate_interval", "2m"),
        ("$__range", "6h"),
        ("$namespace", "apps"),
        ("$release", "desk-deskpilot"),
    ):
        expr = expr.replace(variable, value)
    assert "$" not in expr, expr
    return expr


def test_the_dashboard_is_a_configmap_from_the_charts_file(helm_env: dict[str, str]) -> None:
    configmap, dashboard = dashboard_of(render(helm_env, ["metrics.dashboard.enabled=true"]))
    assert configmap["metadata"]["name"] == "desk-deskpilot-dashboard"
    assert configmap["metadata"]["labels"]["grafana_dashboard"] == "1"
    assert "namespace" not in configmap["metadata"]
    source = json.loads((CHART / "files" / "grafana-dashboard.json").read_text())
    assert dashboard["panels"] == source["panels"]
    # this release's own uid, title and variables' defaults
    assert dashboard["title"] == "Deskpilot: desk-deskpilot (apps)"
    assert re.fullmatch(r"deskpilot-[0-9a-f]{20}", dashboard["uid"])  # Grafana: at most 40 characters
    variables = {v["name"]: v for v in dashboard["templating"]["list"]}
    assert variables["namespace"]["current"]["value"] == "apps"
    assert variables["release"]["current"]["value"] == "desk-deskpilot"
    assert variables["datasource"]["type"] == "datasource"
    # the same on every upgrade (Grafana keys a dashboard on it), another in another namespace
    assert dashboard_of(render(helm_env, ["metrics.dashboard.enabled=true"]))[1]["uid"] == dashboard["uid"]
    dashboard_on = ("--set", "metrics.dashboard.enabled=true")
    elsewhere = helm(helm_env, "template", "desk", str(CHART), "--namespace", "qa", *dashboard_on)
    assert elsewhere.returncode == 0, elsewhere.stderr
    (configmap,) = [d for d in yaml.safe_load_all(elsewhere.stdout) if d and d["kind"] == "ConfigMap"]
    (text,) = configmap["data"].values()
    assert json.loads(text)["uid"] != dashboard["uid"]


def test_the_dashboards_label_namespace_and_annotations_are_values(helm_env: dict[str, str]) -> None:
    settings = [
        "metrics.dashboard.enabled=true", "metrics.dashboard.labels.grafana_dashboard=null",
        "metrics.dashboard.labels.dashboards=deskpilot", "metrics.dashboard.namespace=monitoring",
        "metrics.dashboard.annotations.grafana_folder=Deskpilot",
    ]  # fmt: skip
    configmap, _ = dashboard_of(render(helm_env, settings))
    assert configmap["metadata"]["namespace"] == "monitoring"
    assert configmap["metadata"]["labels"]["dashboards"] == "deskpilot"
    assert "grafana_dashboard" not in configmap["metadata"]["labels"]
    assert configmap["metadata"]["annotations"] == {"grafana_folder": "Deskpilot"}


def test_the_dashboard_shows_the_golden_signals_from_the_exported_metrics_only(
    helm_env: dict[str, str], promtool: str, tmp_path: Path
) -> None:
    _, dashboard = dashboard_of(render(helm_env, ["metrics.dashboard.enabled=true"]))
    exprs = []
    for panel in panels(dashboard):
        assert panel["targets"], panel["title"]
        assert panel["datasource"] == {"type": "prometheus", "uid": "${datasource}"}
        for target in panel["targets"]:
            expr = target["expr"]
            names = metric_names(expr)
            assert names and names <= METRIC_NAMES, (panel["title"], names - METRIC_NAMES)
            # this release's series only: its namespace and its jobs (the ServiceMonitors' names)
            for selector in re.findall(r"\{[^}]*\}", expr):
                assert 'namespace="$namespace"' in selector, expr
                assert re.search(r'job="\$release-(desktop|tasks|ui)"', selector), expr
            exprs.append(expr)
    read = set().union(*map(metric_names, exprs))
    assert read >= GOLDEN, GOLDEN - read
    # every query is valid PromQL, as Prometheus will get it (promtool parses rules' expressions)
    rules = [{"record": f"dashboard:query_{i}", "expr": grafana_free(e)} for i, e in enumerate(exprs)]
    path = tmp_path / "dashboard-queries.yaml"
    path.write_text(yaml.safe_dump({"groups": [{"name": "dashboard", "rules": rules}]}))
    check = run(promtool, "check", "rules", str(path))
    assert check.returncode == 0, check.stdout + check.stderr
    # the variables' own queries read an exported metric too
    variables = [v for v in dashboard["templating"]["list"] if v["type"] == "query"]
    for variable in variables:
        found = re.fullmatch(r"label_values\((.+), (\w+)\)", variable["query"]["query"])
        assert found, variable["query"]
        series, label = found.groups()
        assert metric_names(series) <= METRIC_NAMES and label in ("namespace", "job")
    ids = [p["id"] for p in dashboard["panels"]]
    assert len(ids) == len(set(ids))


# ------------------------------------------------------------------------------------------------- the alerts


def rule_groups(objects: Objects) -> list[dict[str, Any]]:
    groups: list[dict[str, Any]] = objects[("PrometheusRule", "desk-deskpilot")]["spec"]["groups"]
    return groups


@pytest.mark.parametrize(
    "settings",
    [
        ["metrics.rules.enabled=true"],
        [*FLEET, "metrics.rules.enabled=true", "metrics.rules.alertLabels=null", "metrics.rules.window=30m"],
        [
            "metrics.rules.enabled=true", "metrics.rules.modelErrorRatio=0.25", "metrics.rules.for=2m",
            "metrics.rules.desktopDownMinutes=1", "metrics.rules.taskWaitMinutes=30",
        ],
    ],
    ids=["defaults", "a fleet, no alert labels", "thresholds"],
)  # fmt: skip
def test_promtool_checks_the_rules(
    helm_env: dict[str, str], promtool: str, tmp_path: Path, settings: list[str]
) -> None:
    path = tmp_path / "rules.yaml"
    path.write_text(yaml.safe_dump({"groups": rule_groups(render(helm_env, settings))}))
    check = run(promtool, "check", "rules", str(path))
    assert check.returncode == 0, check.stdout + check.stderr
    assert "SUCCESS: 4 rules found" in check.stdout


def test_the_thresholds_are_values(helm_env: dict[str, str]) -> None:
    def alerts(settings: list[str]) -> dict[str, dict[str, Any]]:
        (group,) = rule_groups(render(helm_env, ["metrics.rules.enabled=true", *settings]))
        return {r["alert"]: r for r in group["rules"]}

    default = alerts([])
    assert set(default) == {
        "DeskpilotDesktopUnhealthy", "DeskpilotServiceDown", "DeskpilotTasksWaiting", "DeskpilotModelErrors",
    }  # fmt: skip
    assert default["DeskpilotDesktopUnhealthy"]["for"] == "5m"
    waiting, errors = default["DeskpilotTasksWaiting"]["expr"], default["DeskpilotModelErrors"]["expr"]
    assert "> 600" in waiting and "[10m]" in waiting and "[15m]" in waiting
    assert "> 0.1\n" in errors and ">= 10" in errors
    assert all(r["labels"] == {"severity": "warning"} for r in default.values())
    changed = alerts([
        "metrics.rules.desktopDownMinutes=2", "metrics.rules.taskWaitMinutes=30", "metrics.rules.for=1m",
        "metrics.rules.modelErrorRatio=0.25", "metrics.rules.modelMinCalls=3", "metrics.rules.window=1h",
        "metrics.rules.alertLabels.severity=critical", "metrics.rules.alertLabels.team=desk",
    ])  # fmt: skip
    assert changed["DeskpilotDesktopUnhealthy"]["for"] == changed["DeskpilotServiceDown"]["for"] == "2m"
    waiting, errors = changed["DeskpilotTasksWaiting"], changed["DeskpilotModelErrors"]
    assert "> 1800" in waiting["expr"] and "[30m]" in waiting["expr"] and "[1h]" in waiting["expr"]
    assert "> 0.25\n" in errors["expr"] and ">= 3" in errors["expr"] and errors["for"] == "1m"
    assert all(r["labels"] == {"severity": "critical", "team": "desk"} for r in changed.values())
    for rule in default.values():  # this release's series only
        assert metric_names(rule["expr"]) <= METRIC_NAMES | {"up"}
        assert 'namespace="apps"' in rule["expr"] and "desk-deskpilot-" in rule["expr"]


def series(name: str, labels: dict[str, str], values: str) -> dict[str, str]:
    selector = ", ".join(f'{k}="{v}"' for k, v in {"namespace": "apps", **labels}.items())
    return {"series": f"{name}{{{selector}}}", "values": values}


DESKTOP = {"job": "desk-deskpilot-desktop"}
TASKS = {"job": "desk-deskpilot-tasks", "pod": "desk-deskpilot-api-1"}
WARNING = {"severity": "warning", "namespace": "apps"}
FIRING = {"exp_labels": WARNING}
# promtool's unit tests (promtool test rules): synthetic series, one sample a minute, and the alerts firing
UNIT_TESTS: list[dict[str, Any]] = [
    {  # a display down 5 minutes; another release's display (another namespace) is not this release's
        "input_series": [
            series("deskpilot_display_up", {**DESKTOP, "pod": "desk-deskpilot-desktop-0"}, "1 1 0x20"),
            series("deskpilot_display_up", {**DESKTOP, "pod": "desk-deskpilot-desktop-1"}, "1x22"),
            {
                "series": 'deskpilot_display_up{namespace="qa", job="desk-deskpilot-desktop"}',
                "values": "0x22",
            },
        ],
        "alert_rule_test": [
            {"eval_time": "6m", "alertname": "DeskpilotDesktopUnhealthy", "exp_alerts": []},  # down 4 min
            {
                "eval_time": "8m",
                "alertname": "DeskpilotDesktopUnhealthy",
                "exp_alerts": [{"exp_labels": {**WARNING, "pod": "desk-deskpilot-desktop-0"}}],
            },
        ],
    },
    {  # the UI refuses the scrape (a 401: the token changed under it)
        "input_series": [
            series("up", {"job": "desk-deskpilot-ui", "pod": "p", "instance": "10.0.0.1:9992"}, "0x10"),
            series("up", {"job": "desk-deskpilot-tasks", "pod": "p", "instance": "10.0.0.1:9991"}, "1x10"),
            series("up", {"job": "postgresql", "pod": "db", "instance": "10.0.0.2:9187"}, "0x10"),
        ],
        "alert_rule_test": [
            {
                "eval_time": "6m",
                "alertname": "DeskpilotServiceDown",
                "exp_alerts": [
                    {
                        "exp_labels": {
                            **WARNING,
                            "job": "desk-deskpilot-ui",
                            "pod": "p",
                            "instance": "10.0.0.1:9992",
                        }
                    }
                ],
            }
        ],
    },
    {  # claimed tasks waited 10 to 60 minutes each
        "input_series": [
            *(
                series("deskpilot_queue_wait_seconds_bucket", {**TASKS, "le": le}, values)
                for le, values in (("60", "0x40"), ("600", "0x40"), ("3600", "0+1x40"), ("+Inf", "0+1x40"))
            ),
            series("deskpilot_queue_wait_seconds_count", TASKS, "0+1x40"),
        ],
        "alert_rule_test": [
            {"eval_time": "30m", "alertname": "DeskpilotTasksWaiting", "exp_alerts": [FIRING]},
        ],
    },
    {  # a full fleet: tasks pending, no desktop idle, nothing claimed for 10 minutes (after 3 claims)
        "input_series": [
            series("deskpilot_tasks", {**TASKS, "status": "PENDING"}, "0 0 0 4x30"),
            series("deskpilot_desktops", {**TASKS, "state": "running"}, "3x33"),
            series("deskpilot_desktops", {**TASKS, "state": "idle"}, "3 3 3 0x30"),
            series("deskpilot_queue_wait_seconds_count", TASKS, "0 1 2 3x30"),
        ],
        "alert_rule_test": [
            {"eval_time": "12m", "alertname": "DeskpilotTasksWaiting", "exp_alerts": []},  # a claim at 3m
            {"eval_time": "20m", "alertname": "DeskpilotTasksWaiting", "exp_alerts": [FIRING]},
        ],
    },
    {  # a task scheduled for later, pending beside an idle desktop: nothing waits
        "input_series": [
            series("deskpilot_tasks", {**TASKS, "status": "PENDING"}, "1x40"),
            series("deskpilot_desktops", {**TASKS, "state": "idle"}, "1x40"),
            series("deskpilot_queue_wait_seconds_count", TASKS, "0x40"),
        ],
        "alert_rule_test": [{"eval_time": "30m", "alertname": "DeskpilotTasksWaiting", "exp_alerts": []}],
    },
    {  # one model fails 40 % of its calls; another is fine; a third failed a few calls only
        "input_series": [
            series("deskpilot_model_call_duration_seconds_count", {**TASKS, "model": m, "outcome": o}, v)
            for m, o, v in (
                ("anthropic/claude", "ok", "0+6x40"),
                ("anthropic/claude", "error", "0+4x40"),
                ("openai/gpt", "ok", "0+10x40"),
                ("openai/gpt", "error", "0x40"),
                ("gemini/flash", "error", "0+0.5x40"),
            )
        ],
        "alert_rule_test": [
            {
                "eval_time": "30m",
                "alertname": "DeskpilotModelErrors",
                "exp_alerts": [{"exp_labels": {**WARNING, "model": "anthropic/claude"}}],
            }
        ],
    },
]


def test_the_alerts_fire_when_they_should_and_only_then(
    helm_env: dict[str, str], promtool: str, tmp_path: Path
) -> None:
    groups = rule_groups(render(helm_env, ["metrics.rules.enabled=true"]))
    for group in groups:  # promtool compares annotations too: these tests are about when alerts fire
        for rule in group["rules"]:
            rule.pop("annotations")
    (tmp_path / "rules.yaml").write_text(yaml.safe_dump({"groups": groups}))
    tests = [{"interval": "1m", **t} for t in UNIT_TESTS]
    (tmp_path / "tests.yaml").write_text(
        yaml.safe_dump({"rule_files": ["rules.yaml"], "evaluation_interval": "1m", "tests": tests})
    )
    unit = run(promtool, "test", "rules", "tests.yaml", cwd=tmp_path)
    assert unit.returncode == 0, unit.stdout + unit.stderr


# ----------------------------------------------------------------------------------------- KEDA on Prometheus


def test_keda_may_scale_the_desktops_on_a_prometheus_query(helm_env: dict[str, str]) -> None:
    objects = render(helm_env, PROMETHEUS_KEDA)
    scaled = objects[("ScaledObject", "desk-deskpilot-desktop")]
    validate(scaled)
    assert not of_kind(objects, "TriggerAuthentication"), "the database is not KEDA's business here"
    (trigger,) = scaled["spec"]["triggers"]
    assert trigger["type"] == "prometheus" and "authenticationRef" not in trigger
    meta = trigger["metadata"]
    assert meta["serverAddress"] == "http://prometheus-operated.monitoring.svc:9090"
    assert meta["threshold"] == "1"  # tasksPerDesktop
    assert meta["query"] == (
        'sum(max by (status) (deskpilot_tasks{namespace="apps", job="desk-deskpilot-tasks",'
        ' status=~"PENDING|IN_PROGRESS"}))'
    )
    assert metric_names(meta["query"]) == {"deskpilot_tasks"}
    own = render(
        helm_env,
        [
            *PROMETHEUS_KEDA, "desktops.autoscaling.tasksPerDesktop=2",
            "desktops.autoscaling.prometheus.query=sum(my_queue)",
            "desktops.autoscaling.prometheus.authenticationRef=prometheus-auth",
            "desktops.autoscaling.prometheus.authModes=bearer",
        ],
    )[("ScaledObject", "desk-deskpilot-desktop")]  # fmt: skip
    validate(own)
    (trigger,) = own["spec"]["triggers"]
    assert trigger["authenticationRef"] == {"name": "prometheus-auth"}
    assert trigger["metadata"] == {
        "serverAddress": "http://prometheus-operated.monitoring.svc:9090",
        "query": "sum(my_queue)",
        "threshold": "2",
        "authModes": "bearer",
    }


def test_keda_scales_on_postgresql_by_default(helm_env: dict[str, str]) -> None:
    objects = render(helm_env, [*FLEET, "desktops.autoscaling.enabled=true"])
    (trigger,) = objects[("ScaledObject", "desk-deskpilot-desktop")]["spec"]["triggers"]
    assert trigger["type"] == "postgresql"
    assert ("TriggerAuthentication", "desk-deskpilot-desktop") in objects


@pytest.mark.parametrize(
    ("settings", "reason"),
    [
        (
            [*FLEET, "desktops.autoscaling.enabled=true", "desktops.autoscaling.trigger=prometheus"],
            "set desktops.autoscaling.prometheus.serverAddress",
        ),
        (["desktops.autoscaling.trigger=cpu"], "desktops.autoscaling.trigger: postgresql"),
    ],
    ids=["no server", "an unknown trigger"],
)
def test_a_keda_trigger_that_cannot_work_is_refused_with_the_reason(
    helm_env: dict[str, str], settings: list[str], reason: str
) -> None:
    out = helm(helm_env, "template", "desk", str(CHART), *set_args(settings))
    assert out.returncode != 0 and reason in out.stderr


def test_notes_say_what_is_scraped_and_where(helm_env: dict[str, str]) -> None:
    text = notes(helm_env, METRICS)
    assert "ServiceMonitors desk-deskpilot-desktop, -tasks and -ui" in text
    assert "ConfigMap desk-deskpilot-dashboard" in text
    assert "PrometheusRule desk-deskpilot" in text
