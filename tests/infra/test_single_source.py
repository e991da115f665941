"""One GPU metric contract: agent config, IAM condition, policy, dashboard and alarm agree.

Read from the synthesized template (the user data's agent JSON, the policy,
the dashboard body), not from the Python that wrote them: the reference
module's 8.3.0 scaled on a series its agent never wrote.
"""

from __future__ import annotations

import json
import re
from typing import Any

import yaml

from ecs_gpu.contracts import gpu_metric
from ecs_gpu.spec import Spec

from .conftest import gpu_signal_only
from .tpl import as_list, one, props, render, resources, statements

T = dict[str, Any]


def _agent_config(t: T) -> dict[str, Any]:
    data = props(t, "AWS::EC2::LaunchTemplate")["LaunchTemplateData"]
    doc = yaml.safe_load(data["UserData"]["Fn::Base64"])
    (f,) = [f for f in doc["write_files"] if f["path"] == gpu_metric.AGENT_CONFIG_PATH]
    cfg: dict[str, Any] = json.loads(f["content"])
    return cfg


def _dashboard_series(t: T) -> list[list[Any]]:
    body = json.loads(render(props(t, "AWS::CloudWatch::Dashboard")["DashboardBody"]))
    out = []
    for w in body["widgets"]:
        for m in w.get("properties", {}).get("metrics", []):
            out.append([x for x in m if not isinstance(x, dict)])
    return out


def _gpu_policy_spec(t: T) -> dict[str, Any]:
    (spec_,) = [
        p["Properties"]["TargetTrackingScalingPolicyConfiguration"]["CustomizedMetricSpecification"]
        for p in resources(t, "AWS::ApplicationAutoScaling::ScalingPolicy").values()
        if "CustomizedMetricSpecification"
        in p["Properties"]["TargetTrackingScalingPolicyConfiguration"]
    ]
    found: dict[str, Any] = spec_
    return found


def _policy_series(spec_: dict[str, Any]) -> list[dict[str, Any]]:
    """Every metric the policy reads, in the plain form's shape (Namespace, MetricName, ...)."""
    if "Metrics" not in spec_:
        return [spec_]
    return [
        {**q["MetricStat"]["Metric"], "Statistic": q["MetricStat"]["Stat"]}
        for q in spec_["Metrics"]
        if "MetricStat" in q
    ]


def _assert_one_contract(t: T) -> None:
    asg_name = props(t, "AWS::AutoScaling::AutoScalingGroup")["AutoScalingGroupName"]
    cluster_name = props(t, "AWS::ECS::Cluster")["ClusterName"]

    # Producer: the host agent config shipped in the user data.
    agent = _agent_config(t)["metrics"]
    agent_ns = agent["namespace"]
    agent_dims = set(agent["append_dimensions"])
    assert agent["aggregation_dimensions"] == [[gpu_metric.DIMENSION]]
    agent_metrics = {
        gpu_metric.METRIC_PREFIX + m
        for m in agent["metrics_collected"]["nvidia_gpu"]["measurement"]
    }

    # IAM: the namespace the instance may publish to.
    (put,) = [st for _, st in statements(t) if "cloudwatch:PutMetricData" in as_list(st["Action"])]
    iam_ns = put["Condition"]["StringEquals"]["cloudwatch:namespace"]

    # The GPU target-tracking policy: the agent's series, plus (metric-math
    # form) ECS's GPUReservation for the stack's own cluster.
    policy_series = _policy_series(_gpu_policy_spec(t))
    agent_series = [m for m in policy_series if m["Namespace"] == gpu_metric.NAMESPACE]
    ecs_series = [m for m in policy_series if m["Namespace"] != gpu_metric.NAMESPACE]
    (policy_agent,) = agent_series
    (policy_dim,) = policy_agent["Dimensions"]
    for m in ecs_series:
        assert (m["Namespace"], m["MetricName"]) == (
            gpu_metric.RESERVATION_NAMESPACE,
            gpu_metric.RESERVATION_METRIC,
        )
        assert m["Dimensions"] == [
            {"Name": gpu_metric.RESERVATION_DIMENSION, "Value": cluster_name}
        ]

    # The missing-metric alarm.
    _, alarm = one(t, "AWS::CloudWatch::Alarm")
    ap = alarm["Properties"]
    (alarm_dim,) = ap["Dimensions"]

    # The dashboard's GPU series.
    series = _dashboard_series(t)
    gpu_series = [s for s in series if s and s[0] == gpu_metric.NAMESPACE]
    assert gpu_series, "the dashboard shows no GPU series"

    assert (
        agent_ns == iam_ns == policy_agent["Namespace"] == ap["Namespace"] == gpu_metric.NAMESPACE
    )
    assert agent_dims == {gpu_metric.DIMENSION}
    assert agent["append_dimensions"][gpu_metric.DIMENSION] == gpu_metric.APPEND_DIMENSION_VALUE
    assert policy_dim == alarm_dim == {"Name": gpu_metric.DIMENSION, "Value": asg_name}
    assert policy_agent["MetricName"] == ap["MetricName"] == gpu_metric.UTILIZATION
    assert policy_agent["MetricName"] in agent_metrics
    assert agent_metrics == set(gpu_metric.METRIC_NAMES)
    for ns, name, dim, value in gpu_series:
        assert (ns, dim, value) == (gpu_metric.NAMESPACE, gpu_metric.DIMENSION, asg_name)
        assert name in agent_metrics
    assert policy_agent["Statistic"] == ap["Statistic"] == gpu_metric.STATISTIC
    if ecs_series:
        # What the dashboard graphs as reserved GPUs is the series the policy divides by.
        reserved = [
            gpu_metric.RESERVATION_NAMESPACE,
            gpu_metric.RESERVATION_METRIC,
            gpu_metric.RESERVATION_DIMENSION,
            cluster_name,
        ]
        assert reserved in series


def test_every_consumer_names_the_same_series(t: T, spec: Spec) -> None:
    gpu_signal_only(spec)
    _assert_one_contract(t)


def test_asg_average_variant_names_the_same_series(variant_reports: dict[str, Any]) -> None:
    _assert_one_contract(variant_reports["asg-average"].template)


def test_task_gpu_expression_reads_only_the_policys_queries(t: T, spec: Spec) -> None:
    gpu_signal_only(spec)
    queries = _gpu_policy_spec(t)["Metrics"]
    (expr,) = [q for q in queries if "Expression" in q]
    assert expr["ReturnData"] is True
    assert all(q["ReturnData"] is False for q in queries if q is not expr)
    hidden = {q["Id"] for q in queries if q is not expr}
    assert hidden == {gpu_metric.UTILIZATION_ID, gpu_metric.RESERVATION_ID}
    # Identifiers in the expression (function names aside) are query ids.
    words = set(re.findall(r"[a-z_][a-z0-9_]*", expr["Expression"]))
    assert words == hidden


def test_dashboard_tracks_the_policys_expression_with_its_target(
    t: T, spec: Spec, variant_reports: dict[str, Any]
) -> None:
    gpu_signal_only(spec)

    def gpu_widget(tpl: T) -> dict[str, Any]:
        body = json.loads(render(props(tpl, "AWS::CloudWatch::Dashboard")["DashboardBody"]))
        (w,) = [w for w in body["widgets"] if w["properties"].get("title") == "GPU utilization (%)"]
        props_: dict[str, Any] = w["properties"]
        return props_

    w = gpu_widget(t)
    exprs = [m[0]["expression"] for m in w["metrics"] if isinstance(m[0], dict)]
    assert exprs == [_gpu_policy_spec(t)["Metrics"][-1]["Expression"]]
    (line,) = w["annotations"]["horizontal"]
    assert line["value"] == spec.scaling.gpu_target_percent
    assert "task-held" in line["label"]
    raw = [m for m in w["metrics"] if m[:2] == [gpu_metric.NAMESPACE, gpu_metric.UTILIZATION]]
    assert raw and raw[0][-1].get("visible", True) is True  # the raw average is shown too

    plain = gpu_widget(variant_reports["asg-average"].template)
    assert not [m for m in plain["metrics"] if isinstance(m[0], dict)]
    assert "ASG average" in plain["annotations"]["horizontal"][0]["label"]


# --- the concurrency contract (demand_metric.py) ------------------------------------------

CONCURRENCY_SPEC = """
[service]
name = "vllm-conc"
image = "vllm/vllm-openai:v0.11.0"
[service.metrics]
preset = "vllm"
[capacity]
instance_type = "g5.xlarge"
min_instances = 1
max_instances = 4
[scaling]
min_tasks = 1
max_tasks = 4
target_concurrency_per_task = 16
gpu_guard = true
"""


def test_concurrency_producer_iam_policy_alarms_and_dashboard_agree() -> None:
    """The sidecar publishes exactly the series the role may write and everything reads."""
    from ecs_gpu.contracts import demand_metric
    from ecs_gpu.spec import parse_spec
    from ecs_gpu.template.synth import synth_template

    t = synth_template(parse_spec(CONCURRENCY_SPEC, "concurrency"))
    (side,) = [
        c
        for c in props(t, "AWS::ECS::TaskDefinition")["ContainerDefinitions"]
        if c["Name"] == demand_metric.SIDECAR_NAME
    ]
    env = {e["Name"]: e["Value"] for e in side["Environment"]}
    produced = (
        env["NAMESPACE"],
        env["METRIC_NAME"],
        [
            dict(zip(("Name", "Value"), p.split("="), strict=True))
            for p in env["DIMENSIONS"].split(",")
        ],
    )
    cluster = props(t, "AWS::ECS::Cluster")["ClusterName"]
    service = props(t, "AWS::ECS::Service")["ServiceName"]
    assert produced == (
        demand_metric.NAMESPACE,
        demand_metric.METRIC_NAME,
        demand_metric.dimensions(cluster, service),
    )
    assert env["STORAGE_RESOLUTION"] == "1"

    # IAM: the task role's namespace condition.
    (put,) = [
        st
        for _, st in statements(t)
        if "cloudwatch:PutMetricData" in as_list(st["Action"])
        and st["Condition"]["StringEquals"]["cloudwatch:namespace"] != gpu_metric.NAMESPACE
    ]
    assert put["Condition"]["StringEquals"]["cloudwatch:namespace"] == produced[0]

    # Consumers: target tracking, the fast-path and missing-metric alarms, the dashboard.
    policies = [
        p["Properties"]["TargetTrackingScalingPolicyConfiguration"]["CustomizedMetricSpecification"]
        for p in resources(t, "AWS::ApplicationAutoScaling::ScalingPolicy").values()
        if "CustomizedMetricSpecification"
        in p["Properties"].get("TargetTrackingScalingPolicyConfiguration", {})
    ]
    # The concurrency policy reads the series through the capped metric math
    # (fast_path.TRACKING_CAP_RATIO): its one MetricStat is the consumer.
    consumers = [
        {**q["MetricStat"]["Metric"], "Statistic": q["MetricStat"]["Stat"]}
        for p in policies
        for q in p.get("Metrics", [])
        if q.get("MetricStat", {}).get("Metric", {}).get("Namespace") == produced[0]
    ] + [p for p in policies if p.get("Namespace") == produced[0]]
    assert len(consumers) == 1, policies
    alarms = [
        a["Properties"]
        for a in resources(t, "AWS::CloudWatch::Alarm").values()
        if a["Properties"].get("Namespace") == produced[0]
    ]
    assert len(alarms) >= 2  # the fast path and the missing-metric alarm
    fast = [a for a in alarms if a["Period"] < 60]
    assert [a["Period"] for a in fast] == [demand_metric.ALARM_PERIOD_S]
    for c in [*consumers, *alarms]:
        assert (c["Namespace"], c["MetricName"], c["Dimensions"]) == produced
        assert c["Statistic"] == demand_metric.STATISTIC
    series = [s for s in _dashboard_series(t) if s and s[0] == produced[0]]
    assert series, "the dashboard shows no concurrency series"
    for ns, name, *dims in series:
        assert (ns, name) == produced[:2]
        assert dims == [x for d in produced[2] for x in (d["Name"], d["Value"])]
