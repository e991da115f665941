"""One GPU metric contract: agent config, IAM condition, policy, dashboard and alarm agree.

Read from the synthesized template (the user data's agent JSON, the policy,
the dashboard body), not from the Python that wrote them: the reference
module's 8.3.0 scaled on a series its agent never wrote.
"""

from __future__ import annotations

import json
from typing import Any

import yaml

from ecs_gpu import gpu_metric

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


def test_every_consumer_names_the_same_series(t: T) -> None:
    asg_name = props(t, "AWS::AutoScaling::AutoScalingGroup")["AutoScalingGroupName"]

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

    # The GPU target-tracking policy.
    (spec_,) = [
        p["Properties"]["TargetTrackingScalingPolicyConfiguration"]["CustomizedMetricSpecification"]
        for p in resources(t, "AWS::ApplicationAutoScaling::ScalingPolicy").values()
        if "CustomizedMetricSpecification"
        in p["Properties"]["TargetTrackingScalingPolicyConfiguration"]
    ]
    (policy_dim,) = spec_["Dimensions"]

    # The missing-metric alarm.
    _, alarm = one(t, "AWS::CloudWatch::Alarm")
    ap = alarm["Properties"]
    (alarm_dim,) = ap["Dimensions"]

    # The dashboard's GPU series.
    gpu_series = [s for s in _dashboard_series(t) if s and s[0] == gpu_metric.NAMESPACE]
    assert gpu_series, "the dashboard shows no GPU series"

    assert agent_ns == iam_ns == spec_["Namespace"] == ap["Namespace"] == gpu_metric.NAMESPACE
    assert agent_dims == {gpu_metric.DIMENSION}
    assert agent["append_dimensions"][gpu_metric.DIMENSION] == gpu_metric.APPEND_DIMENSION_VALUE
    assert policy_dim == alarm_dim == {"Name": gpu_metric.DIMENSION, "Value": asg_name}
    assert spec_["MetricName"] == ap["MetricName"] == gpu_metric.UTILIZATION
    assert spec_["MetricName"] in agent_metrics
    assert agent_metrics == set(gpu_metric.METRIC_NAMES)
    for ns, name, dim, value in gpu_series:
        assert (ns, dim, value) == (gpu_metric.NAMESPACE, gpu_metric.DIMENSION, asg_name)
        assert name in agent_metrics
    assert spec_["Statistic"] == ap["Statistic"] == gpu_metric.STATISTIC
