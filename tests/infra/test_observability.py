"""Dashboard and missing-GPU-metric alarm, asserted on a real CDK synthesis.

One App holds a minimal stack per spec (only add_observability), synthesized
once for the module: CDK synthesis costs seconds.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ecs_gpu.contracts import gpu_metric
from ecs_gpu.contracts.naming import Names
from ecs_gpu.contracts.signals import CONCURRENCY, DEFAULT_GPU_SIGNAL, SERIES
from ecs_gpu.design import Design, startup
from ecs_gpu.spec import Spec, load_spec, parse_spec

ROOT = Path(__file__).resolve().parents[2]

BUILT_SPEC = """
[service]
name = "obs-test"
image = "example/llm:1"
cpu_units = 4096
memory_mib = 12288

[capacity]
instance_type = "g6.xlarge"
max_instances = 5
target_capacity_percent = 90

[scaling]
max_tasks = 5
gpu_target_percent = 62.5
cpu_target_percent = 75

[simulation]
instance_boot_s = 600.0
"""

EMAIL_ALERTS = """
[alerts]
email = ["oncall@example.com", "ml-team@example.com"]
"""

# Every example (the dashboard and alarm contract holds on each) plus one built here.
SPECS: dict[str, Spec] = {
    **{p.stem: load_spec(p) for p in sorted((ROOT / "examples").glob("*.toml"))},
    "built": parse_spec(BUILT_SPEC, "built.toml"),
    "built-email": parse_spec(BUILT_SPEC + EMAIL_ALERTS, "built-email.toml"),
}


@pytest.fixture(scope="module")
def templates() -> dict[str, dict[str, Any]]:
    from ecs_gpu.infra.observability import Observability, add_observability
    from ecs_gpu.node import ensure_node

    ensure_node()
    from aws_cdk import App, BootstraplessSynthesizer, Stack
    from aws_cdk.assertions import Template

    app = App()
    stacks = {}
    for key, spec in SPECS.items():
        stack = Stack(app, f"Obs-{key}", synthesizer=BootstraplessSynthesizer())
        result = add_observability(stack, design=Design.of(spec))
        assert isinstance(result, Observability)
        stacks[key] = stack
    # Build every stack before the first synthesis: CDK synthesizes the app once.
    return {key: dict(Template.from_stack(stack).to_json()) for key, stack in stacks.items()}


# The GPU dashboard and alarm contract: examples on the concurrency signal (g5-vllm)
# have a concurrency panel and a second alarm, tested in tests/infra/test_scaling_policies.py.
@pytest.fixture(params=sorted(k for k, s in SPECS.items() if s.scaling.signal != "concurrency"))
def case(
    request: pytest.FixtureRequest, templates: dict[str, dict[str, Any]]
) -> tuple[Spec, dict[str, Any]]:
    return SPECS[request.param], templates[request.param]


def _one(template: dict[str, Any], rtype: str) -> dict[str, Any]:
    found = [r for r in template["Resources"].values() if r["Type"] == rtype]
    assert len(found) == 1, f"expected one {rtype}, found {len(found)}"
    props: dict[str, Any] = found[0]["Properties"]
    return props


def _dashboard_body(template: dict[str, Any]) -> dict[str, Any]:
    """The DashboardBody JSON, with CloudFormation references replaced by placeholders."""
    body = _one(template, "AWS::CloudWatch::Dashboard")["DashboardBody"]
    if isinstance(body, dict):
        sep, parts = body["Fn::Join"]
        body = sep.join(p if isinstance(p, str) else "TOKEN" for p in parts)
    loaded: dict[str, Any] = json.loads(body)
    return loaded


def _widget(body: dict[str, Any], title: str) -> dict[str, Any]:
    found = [w for w in body["widgets"] if w["properties"].get("title") == title]
    assert len(found) == 1, [w["properties"].get("title") for w in body["widgets"]]
    props: dict[str, Any] = found[0]["properties"]
    return props


def _series(widget: dict[str, Any]) -> list[tuple[str, str, dict[str, str]]]:
    """(namespace, metric, dimensions) of each metric line in a widget."""
    out = []
    for line in widget["metrics"]:
        fields = [f for f in line if isinstance(f, str)]
        if not fields:
            continue  # a metric-math expression line: no namespace of its own
        namespace, name, *dims = fields
        out.append((namespace, name, dict(zip(dims[::2], dims[1::2], strict=True))))
    return out


def test_dashboard_is_named_from_names(case: tuple[Spec, dict[str, Any]]) -> None:
    spec, template = case
    assert (
        _one(template, "AWS::CloudWatch::Dashboard")["DashboardName"]
        == Names(spec.service.name).dashboard
    )


def test_gpu_utilization_panel_uses_the_contract_and_marks_the_target(
    case: tuple[Spec, dict[str, Any]],
) -> None:
    spec, template = case
    widget = _widget(_dashboard_body(template), "GPU utilization (%)")
    names = Names(spec.service.name)
    raw = (gpu_metric.NAMESPACE, gpu_metric.UTILIZATION, {gpu_metric.DIMENSION: names.asg})
    # task-gpus (the default): the tracked expression over the raw average and
    # ECS's GPUReservation is drawn beside the raw average.
    reserved = (
        gpu_metric.RESERVATION_NAMESPACE,
        gpu_metric.RESERVATION_METRIC,
        {gpu_metric.RESERVATION_DIMENSION: names.cluster},
    )
    assert spec.scaling.gpu_metric == "task-gpus"
    assert _series(widget) == [raw, reserved]
    exprs = [line[0]["expression"] for line in widget["metrics"] if isinstance(line[0], dict)]
    assert exprs == [gpu_metric.TASK_GPU_EXPRESSION]
    assert widget["metrics"][0][-1]["period"] == gpu_metric.PERIOD_S
    values = [a["value"] for a in widget["annotations"]["horizontal"]]
    assert values == [spec.scaling.gpu_target_percent]


def test_gpu_memory_panel_uses_the_contract(case: tuple[Spec, dict[str, Any]]) -> None:
    spec, template = case
    widget = _widget(_dashboard_body(template), "GPU memory per GPU (MiB)")
    dims = {gpu_metric.DIMENSION: Names(spec.service.name).asg}
    assert _series(widget) == [
        (gpu_metric.NAMESPACE, gpu_metric.MEMORY_USED, dims),
        (gpu_metric.NAMESPACE, gpu_metric.MEMORY_TOTAL, dims),
    ]


def test_every_gpu_series_on_the_dashboard_is_in_the_contract(
    case: tuple[Spec, dict[str, Any]],
) -> None:
    spec, template = case
    body = _dashboard_body(template)
    gpu_series = [
        s
        for w in body["widgets"]
        if "metrics" in w["properties"]
        for s in _series(w["properties"])
        if s[0] == gpu_metric.NAMESPACE
    ]
    assert {s[1] for s in gpu_series} == set(gpu_metric.METRIC_NAMES)
    asg = Names(spec.service.name).asg
    assert all(s[2] == {gpu_metric.DIMENSION: asg} for s in gpu_series)


def test_service_cpu_panel_marks_the_cpu_target(case: tuple[Spec, dict[str, Any]]) -> None:
    spec, template = case
    names = Names(spec.service.name)
    widget = _widget(_dashboard_body(template), "Service CPU utilization (%)")
    assert _series(widget) == [
        ("AWS/ECS", "CPUUtilization", {"ClusterName": names.cluster, "ServiceName": names.service})
    ]
    values = [a["value"] for a in widget["annotations"]["horizontal"]]
    assert values == [spec.scaling.cpu_target_percent]


def test_task_instance_and_reservation_panels(case: tuple[Spec, dict[str, Any]]) -> None:
    spec, template = case
    names = Names(spec.service.name)
    body = _dashboard_body(template)
    service = {"ClusterName": names.cluster, "ServiceName": names.service}
    tasks = {(ns, m): d for ns, m, d in _series(_widget(body, "Tasks"))}
    assert tasks[("ECS/ContainerInsights", "DesiredTaskCount")] == service
    assert tasks[("ECS/ContainerInsights", "RunningTaskCount")] == service
    instances = _series(_widget(body, "GPU instances"))
    assert ("AWS/AutoScaling", "GroupInServiceInstances", {"AutoScalingGroupName": names.asg}) in (
        instances
    )
    cpr = _widget(body, "Capacity provider reservation (%)")
    assert _series(cpr) == [
        (
            "AWS/ECS/ManagedScaling",
            "CapacityProviderReservation",
            {"ClusterName": names.cluster, "CapacityProviderName": names.capacity_provider},
        )
    ]
    values = [a["value"] for a in cpr["annotations"]["horizontal"]]
    assert values == [spec.capacity.target_capacity_percent]


def test_missing_metric_alarm_fires_only_on_missing_data(
    case: tuple[Spec, dict[str, Any]],
) -> None:
    spec, template = case
    alarm = _one(template, "AWS::CloudWatch::Alarm")
    assert alarm["AlarmName"] == Names(spec.service.name).gpu_metric_missing_alarm
    assert alarm["Namespace"] == gpu_metric.NAMESPACE
    assert alarm["MetricName"] == gpu_metric.UTILIZATION
    assert alarm["Dimensions"] == gpu_metric.dimensions(Names(spec.service.name).asg)
    assert alarm["Statistic"] == gpu_metric.STATISTIC
    assert alarm["Period"] == gpu_metric.PERIOD_S
    assert alarm["TreatMissingData"] == "breaching"
    # Utilization is a percentage >= 0: no real datapoint is ever below 0.
    assert alarm["ComparisonOperator"] == "LessThanThreshold"
    assert alarm["Threshold"] == 0
    assert alarm["DatapointsToAlarm"] == alarm["EvaluationPeriods"]


def test_missing_metric_alarm_tolerates_a_gpu_boot(case: tuple[Spec, dict[str, Any]]) -> None:
    from ecs_gpu.infra.observability import (
        series_first_datapoint_s,
        series_missing_alarm_evaluation_periods,
    )

    gpu = SERIES[DEFAULT_GPU_SIGNAL]

    def first_datapoint_s(spec: Spec) -> float:
        return series_first_datapoint_s(Design.of(spec), gpu)

    def missing_alarm_evaluation_periods(spec: Spec) -> int:
        return series_missing_alarm_evaluation_periods(Design.of(spec), gpu)

    spec, template = case
    alarm = _one(template, "AWS::CloudWatch::Alarm")
    periods = alarm["EvaluationPeriods"]
    assert periods == missing_alarm_evaluation_periods(spec)
    # A healthy instance's first datapoint arrives well inside the window...
    assert periods * gpu_metric.PERIOD_S >= 2 * first_datapoint_s(spec)
    assert first_datapoint_s(spec) > spec.simulation.instance_boot_s
    # ...and CloudWatch's one-day cap on the window holds.
    assert periods * alarm["Period"] <= 86_400


def test_evaluation_window_grows_with_the_spec_boot_time() -> None:
    from ecs_gpu.infra.observability import series_missing_alarm_evaluation_periods

    def missing_alarm_evaluation_periods(spec: Spec) -> int:
        return series_missing_alarm_evaluation_periods(Design.of(spec), SERIES[DEFAULT_GPU_SIGNAL])

    # The example uses the default 150 s boot, the built spec 600 s.
    assert missing_alarm_evaluation_periods(SPECS["built"]) > missing_alarm_evaluation_periods(
        SPECS["g5-vllm"]
    )
    slow = SPECS["built"].model_copy(
        update={"simulation": SPECS["built"].simulation.model_copy(update={"instance_boot_s": 1e6})}
    )
    assert missing_alarm_evaluation_periods(slow) * gpu_metric.PERIOD_S == 86_400


def test_concurrency_missing_window_waits_for_a_large_model() -> None:
    from ecs_gpu.infra.observability import series_missing_alarm_evaluation_periods

    # The server answers /metrics only after the model: with model_size_gib
    # the load is derived from the size (startup.model_ready_s), not
    # [simulation] model_load_s; a window sized for 60 s paged on every cold
    # start of a 400-GiB model.
    text = Path("examples/g5-vllm.toml").read_text()
    text = text.replace("[service]\n", "[service]\nmodel_size_gib = 400\n", 1)
    # 400 GiB of weights load only on 8 x 80 GB, with room for them on disk.
    text = text.replace("gpus_per_task = 1", "gpus_per_task = 8")
    text = text.replace('"g5.xlarge"', '"p5.48xlarge"\nroot_volume_gib = 1000')
    big = parse_spec(text, "big.toml")
    assert big.service.model_size_gib == 400 and big.simulation.model_load_s == 60
    sim = big.simulation
    first_task_serving = sim.instance_boot_s + sim.image_pull_s + startup.model_ready_s(big)
    assert first_task_serving > 2_000
    periods = series_missing_alarm_evaluation_periods(Design.of(big), SERIES[CONCURRENCY])
    assert periods * 60 >= 2 * first_task_serving
    # Still no longer than that with a few minutes' margin.
    assert periods * 60 <= 2 * first_task_serving + 300


def test_dashboard_keeps_each_graph_s_own_period(case: tuple[Spec, dict[str, Any]]) -> None:
    # "auto" (CDK's default) would average the 10-s concurrency lines up with
    # the time range shown.
    _, template = case
    assert _dashboard_body(template)["periodOverride"] == "inherit"


def test_dashboard_shows_the_alarm_state(case: tuple[Spec, dict[str, Any]]) -> None:
    _, template = case
    alarm_id = next(
        k for k, r in template["Resources"].items() if r["Type"] == "AWS::CloudWatch::Alarm"
    )
    parts = _one(template, "AWS::CloudWatch::Dashboard")["DashboardBody"]["Fn::Join"][1]
    assert {"Fn::GetAtt": [alarm_id, "Arn"]} in parts


# --- [alerts]: who is told ----------------------------------------------------------


def _resources(template: dict[str, Any], rtype: str) -> dict[str, dict[str, Any]]:
    return {k: r for k, r in template["Resources"].items() if r["Type"] == rtype}


def _arn_text(value: Any) -> str:
    """A Fn::Join'ed ARN as text, pseudo parameters as ${Name}."""
    if isinstance(value, str):
        return value
    sep, parts = value["Fn::Join"]
    return str(sep).join(p if isinstance(p, str) else "${" + str(p["Ref"]) + "}" for p in parts)


def test_alarm_notifies_on_alarm_and_on_ok_only_with_alerts(
    case: tuple[Spec, dict[str, Any]],
) -> None:
    spec, template = case
    alarm = _one(template, "AWS::CloudWatch::Alarm")
    if spec.alerts is None:
        # Nobody to tell: no action at all (an action to nowhere fails on deploy).
        assert "AlarmActions" not in alarm and "OKActions" not in alarm
        assert not _resources(template, "AWS::SNS::Topic")
        return
    assert len(alarm["AlarmActions"]) == 1
    # Recovery is announced to the same people.
    assert alarm["OKActions"] == alarm["AlarmActions"]
    assert "InsufficientDataActions" not in alarm
    if spec.alerts.sns_topic_arn is not None:
        assert alarm["AlarmActions"] == [spec.alerts.sns_topic_arn]
        assert not _resources(template, "AWS::SNS::Topic")
        assert not _resources(template, "AWS::KMS::Key")
    else:
        (topic_id,) = _resources(template, "AWS::SNS::Topic")
        assert alarm["AlarmActions"] == [{"Ref": topic_id}]


def test_an_example_sends_alerts_to_an_existing_topic() -> None:
    spec = SPECS["g6e-alb-odcr"]
    assert spec.alerts is not None and spec.alerts.sns_topic_arn is not None


def test_own_topic_subscribes_each_address_by_email(templates: dict[str, dict[str, Any]]) -> None:
    template = templates["built-email"]
    (topic_id,) = _resources(template, "AWS::SNS::Topic")
    subs = [r["Properties"] for r in _resources(template, "AWS::SNS::Subscription").values()]
    assert sorted(s["Endpoint"] for s in subs) == ["ml-team@example.com", "oncall@example.com"]
    assert all(s["Protocol"] == "email" and s["TopicArn"] == {"Ref": topic_id} for s in subs)


def test_own_topic_uses_a_customer_key_cloudwatch_may_use(
    templates: dict[str, dict[str, Any]],
) -> None:
    template = templates["built-email"]
    ((key_id, key),) = _resources(template, "AWS::KMS::Key").items()
    topic = _one(template, "AWS::SNS::Topic")
    # Not alias/aws/sns: CloudWatch cannot use the AWS-managed key, and
    # notifications to a topic encrypted with it are dropped.
    assert topic["KmsMasterKeyId"] == {"Fn::GetAtt": [key_id, "Arn"]}
    assert key["Properties"]["EnableKeyRotation"] is True
    assert key["DeletionPolicy"] == "Delete"
    assert key["Properties"]["PendingWindowInDays"] == 7
    (cloudwatch,) = [
        st
        for st in key["Properties"]["KeyPolicy"]["Statement"]
        if st.get("Principal") == {"Service": "cloudwatch.amazonaws.com"}
    ]
    assert cloudwatch["Effect"] == "Allow"
    assert sorted(cloudwatch["Action"]) == ["kms:Decrypt", "kms:GenerateDataKey*"]


def test_own_topic_takes_tls_publishes_from_this_alarm_only(
    templates: dict[str, dict[str, Any]],
) -> None:
    template = templates["built-email"]
    (topic_id,) = _resources(template, "AWS::SNS::Topic")
    policy = _one(template, "AWS::SNS::TopicPolicy")
    assert policy["Topics"] == [{"Ref": topic_id}]
    by_sid = {st["Sid"]: st for st in policy["PolicyDocument"]["Statement"]}
    deny = by_sid["AllowPublishThroughSSLOnly"]
    assert deny["Effect"] == "Deny" and deny["Principal"] == "*"
    assert deny["Condition"] == {"Bool": {"aws:SecureTransport": "false"}}
    publish = by_sid["CloudWatchAlarmPublishes"]
    assert publish["Effect"] == "Allow"
    assert publish["Principal"] == {"Service": "cloudwatch.amazonaws.com"}
    assert publish["Action"] == "sns:Publish"
    assert publish["Resource"] == {"Ref": topic_id}
    alarm_name = Names("obs-test").gpu_metric_missing_alarm
    assert _arn_text(publish["Condition"]["ArnEquals"]["aws:SourceArn"]) == (
        "arn:${AWS::Partition}:cloudwatch:${AWS::Region}:${AWS::AccountId}:alarm:" + alarm_name
    )
    assert publish["Condition"]["StringEquals"] == {"aws:SourceAccount": {"Ref": "AWS::AccountId"}}
    # Nothing else is allowed: the policy replaces SNS's default one.
    assert set(by_sid) == {"AllowPublishThroughSSLOnly", "CloudWatchAlarmPublishes"}
