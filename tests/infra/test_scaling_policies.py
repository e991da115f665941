"""The scaling policies on synthesized templates (infra/scaling.py): concurrency target
tracking, the GPU guard, the CPU policy, the missing-metric alarms and the dashboard.

The specs are tests/infra/scaling_cases.py's, each validated once (synth, cfn-lint,
cdk-nag). The alarm and the policies mirror CloudWatch's and Application Auto Scaling's
API shapes, so they are also checked against botocore's service models.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from botocore.model import StructureShape

from ecs_gpu.contracts import demand_metric, gpu_metric
from ecs_gpu.contracts.signals import CONCURRENCY, SERIES
from ecs_gpu.design import Design, startup
from ecs_gpu.design.paths import fast_path, wake
from ecs_gpu.infra import observability
from ecs_gpu.spec import Spec
from ecs_gpu.template.validate import ValidationReport

from .scaling_cases import (
    _SESSION,
    NAMES,
    SPECS,
    T,
    _alarms,
    _concrete,
    _concurrency_plain,
    _custom,
    _fast_alarm,
    _is_missing_alarm,
    _tracking,
    _valid,
    parsed_specs,
    validated_reports,
)
from .test_template import task_gpu_queries
from .tpl import render, resources


@pytest.fixture(scope="module")
def specs() -> dict[str, Spec]:
    return parsed_specs()


@pytest.fixture(scope="module")
def reports() -> dict[str, ValidationReport]:
    return validated_reports()


@pytest.fixture(params=sorted(SPECS))
def case(
    request: pytest.FixtureRequest, specs: dict[str, Spec], reports: dict[str, ValidationReport]
) -> tuple[Spec, T]:
    return specs[request.param], reports[request.param].template


@pytest.mark.parametrize("key", sorted(SPECS))
def test_validates_clean(key: str, reports: dict[str, ValidationReport]) -> None:
    assert reports[key].findings == []


def test_policies_match_the_application_auto_scaling_api(case: tuple[Spec, T]) -> None:
    _, t = case
    policies = resources(t, "AWS::ApplicationAutoScaling::ScalingPolicy")
    assert policies
    for lid, r in policies.items():
        p = r["Properties"]
        params = {
            "PolicyName": p["PolicyName"],
            "ServiceNamespace": "ecs",
            "ResourceId": NAMES.scalable_target_resource_id,
            "ScalableDimension": "ecs:service:DesiredCount",
            "PolicyType": p["PolicyType"],
        }
        for key in ("TargetTrackingScalingPolicyConfiguration", "StepScalingPolicyConfiguration"):
            if key in p:
                params[key] = _concrete(p[key])
        assert len(params) == 6, lid
        _valid("application-autoscaling", "PutScalingPolicy", params)


def test_alarms_match_the_cloudwatch_api(case: tuple[Spec, T]) -> None:
    _, t = case
    for lid, a in _alarms(t).items():
        params = {"AlarmName": a.get("AlarmName", lid), **_concrete(a)}
        _valid("cloudwatch", "PutMetricAlarm", params)
        # CloudWatch's own period rule (PutMetricAlarm.Period): 10, 20, 30 or n x 60,
        # and under an hour the whole window stays within a day.
        if "Metrics" in a:  # the fast scale-in's metric math: each query carries its period
            (period,) = {m["MetricStat"]["Period"] for m in a["Metrics"] if "MetricStat" in m}
            a = {**a, "Period": period}
        assert a["Period"] in (10, 20, 30) or a["Period"] % 60 == 0
        assert a["Period"] * a["EvaluationPeriods"] <= 86_400


def test_target_tracking_has_no_period_to_set() -> None:
    """Why the concurrency policy reads 1-minute datapoints: the API has nowhere to say 10 s."""
    model = _SESSION.get_service_model("application-autoscaling")
    for name in ("CustomizedMetricSpecification", "TargetTrackingMetricStat"):
        shape = model.shape_for(name)
        assert isinstance(shape, StructureShape)
        assert "Period" not in shape.members, name
    metric_types = model.shape_for("MetricType").metadata["enum"]
    assert "ECSServiceAverageCPUUtilizationHighResolution" in metric_types


# --- concurrency target tracking ---------------------------------------------------------------


def _is_concurrency(cms: dict[str, Any]) -> bool:
    """A customized metric on the sidecars' series: plain, or the capped metric math."""
    if cms.get("MetricName") == demand_metric.METRIC_NAME:
        return True
    return any(
        q.get("MetricStat", {}).get("Metric", {}).get("MetricName") == demand_metric.METRIC_NAME
        for q in cms.get("Metrics", [])
    )


def test_concurrency_policy_tracks_the_per_task_mean(case: tuple[Spec, T]) -> None:
    spec, t = case
    (conc,) = [
        c for c in _tracking(t) if _is_concurrency(c.get("CustomizedMetricSpecification", {}))
    ]
    # Average over every task's datapoints in the minute = the mean per task.
    assert demand_metric.STATISTIC == "Average"
    target = spec.scaling.target_concurrency_per_task
    if spec.scaling.fast_scale_out_enabled:
        # The fast path does every scale-out: target tracking reads the series
        # capped at the target (fast_path.TRACKING_CAP_RATIO), so only scales in.
        assert fast_path.TRACKING_CAP_RATIO == 1.0
        assert conc["CustomizedMetricSpecification"] == {
            "Metrics": [
                {
                    "Id": "c",
                    "MetricStat": {"Metric": _concurrency_plain(), "Stat": "Average"},
                    "ReturnData": False,
                },
                {
                    "Id": "capped_concurrency",
                    "Expression": f"IF(c > {target:g}, {target:g}, c)",
                    "Label": demand_metric.CAPPED_LABEL,
                    "ReturnData": True,
                },
            ]
        }
    else:
        assert conc["CustomizedMetricSpecification"] == {
            **_concurrency_plain(),
            "Statistic": "Average",
        }
    assert conc["TargetValue"] == spec.scaling.target_concurrency_per_task
    assert conc["ScaleOutCooldown"] == spec.scaling.scale_out_cooldown_s
    assert conc["ScaleInCooldown"] == spec.scaling.scale_in_cooldown_s
    assert "DisableScaleIn" not in conc  # target tracking is what scales in


def test_gpu_policy_only_as_a_guard(case: tuple[Spec, T]) -> None:
    spec, t = case
    gpu = [c for c in _custom(t) if "Metrics" in c and not _is_concurrency(c)]
    if spec.scaling.gpu_guard:
        # The guard tracks the utilization of the GPUs tasks hold, as the task-gpus signal does.
        assert gpu == [{"Metrics": task_gpu_queries(NAMES)}]
        (cfg,) = [c for c in _tracking(t) if c.get("CustomizedMetricSpecification") == gpu[0]]
        assert cfg["TargetValue"] == spec.scaling.gpu_target_percent
    else:
        assert gpu == []
        assert gpu_metric.UTILIZATION not in json.dumps(_tracking(t))


def test_cpu_policy_uses_ecs_20_second_series(case: tuple[Spec, T]) -> None:
    spec, t = case
    # The CPU policy (a spec with request_count_target has a second predefined one).
    (cpu,) = [
        c
        for c in _tracking(t)
        if "CPU" in c.get("PredefinedMetricSpecification", {}).get("PredefinedMetricType", "")
    ]
    assert cpu["PredefinedMetricSpecification"] == {
        "PredefinedMetricType": "ECSServiceAverageCPUUtilizationHighResolution"
    }
    assert cpu["TargetValue"] == spec.scaling.cpu_target_percent
    (service,) = resources(t, "AWS::ECS::Service").values()
    assert service["Properties"]["Monitoring"] == {
        "MetricConfigurations": [{"MetricNames": ["CPUUtilization"], "ResolutionSeconds": 20}]
    }


# --- missing metric and dashboard --------------------------------------------------------------


def test_missing_metric_alarms_cover_gpu_and_concurrency(case: tuple[Spec, T]) -> None:
    spec, t = case
    if wake.scales_to_zero(spec):
        pytest.skip(
            "their zero form: test_at_zero_the_missing_metric_alarms_wait_for_a_running_task"
        )
    missing = {k: a for k, a in _alarms(t).items() if _is_missing_alarm(a)}
    assert len(missing) == 2
    by_metric = {a["MetricName"]: a for a in missing.values()}
    assert set(by_metric) == {gpu_metric.UTILIZATION, demand_metric.METRIC_NAME}
    conc = by_metric[demand_metric.METRIC_NAME]
    assert {k: conc[k] for k in ("Namespace", "MetricName", "Dimensions")} == (_concurrency_plain())
    assert conc["ComparisonOperator"] == "LessThanThreshold" and conc["Threshold"] == 0
    assert conc["Period"] == gpu_metric.PERIOD_S
    periods = observability.series_missing_alarm_evaluation_periods(
        Design.of(spec), SERIES[CONCURRENCY]
    )
    assert conc["EvaluationPeriods"] == conc["DatapointsToAlarm"] == periods
    # A healthy first task (boot, pull, model load) reports well inside the window.
    sim = spec.simulation
    serving = sim.instance_boot_s + sim.image_pull_s + startup.model_ready_s(spec)
    assert periods * gpu_metric.PERIOD_S >= 2 * serving
    gpu = by_metric[gpu_metric.UTILIZATION]
    assert gpu["AlarmName"] == NAMES.gpu_metric_missing_alarm
    # The description says what the missing GPU series costs with this signal.
    assert ("GPU target tracking is blind" in gpu["AlarmDescription"]) == spec.scaling.gpu_guard
    assert "concurrency target tracking" in conc["AlarmDescription"]


def test_both_missing_alarms_tell_the_alert_topic(case: tuple[Spec, T]) -> None:
    spec, t = case
    missing = [a for a in _alarms(t).values() if _is_missing_alarm(a)]
    if spec.alerts is None:
        assert all("AlarmActions" not in a for a in missing)
        return
    (topic_id,) = resources(t, "AWS::SNS::Topic")
    assert all(a["AlarmActions"] == a["OKActions"] == [{"Ref": topic_id}] for a in missing)
    (policy,) = resources(t, "AWS::SNS::TopicPolicy").values()
    (publish,) = [
        st
        for st in policy["Properties"]["PolicyDocument"]["Statement"]
        if st.get("Sid") == "CloudWatchAlarmPublishes"
    ]
    sources = publish["Condition"]["ArnEquals"]["aws:SourceArn"]
    conc_id = next(
        k
        for k, a in _alarms(t).items()
        if _is_missing_alarm(a) and a["MetricName"] == demand_metric.METRIC_NAME
    )
    assert len(sources) == 2
    assert render(sources[0]).endswith(":alarm:" + NAMES.gpu_metric_missing_alarm)
    assert sources[1] == {"Fn::GetAtt": [conc_id, "Arn"]}


def _dashboard(t: T) -> tuple[dict[str, Any], list[Any]]:
    (dash,) = resources(t, "AWS::CloudWatch::Dashboard").values()
    body = dash["Properties"]["DashboardBody"]
    parts: list[Any] = body["Fn::Join"][1]
    text = "".join(p if isinstance(p, str) else "TOKEN" for p in parts)
    loaded: dict[str, Any] = json.loads(text)
    return loaded, parts


def test_dashboard_shows_concurrency_against_target_and_fast_path(case: tuple[Spec, T]) -> None:
    spec, t = case
    body, parts = _dashboard(t)
    (widget,) = [
        w["properties"]
        for w in body["widgets"]
        if w["properties"].get("title") == "Requests in flight or waiting, per task"
    ]
    lines = [[x for x in m if isinstance(x, str)] for m in widget["metrics"]]
    dims = [x for d in demand_metric.dimensions(NAMES.cluster, NAMES.service) for x in d.values()]
    plain = [demand_metric.NAMESPACE, demand_metric.METRIC_NAME, *dims]
    # CDK abbreviates a repeated series to "..." after the first line.
    assert lines[0] == plain and len(lines) == 3
    stats = [(m[-1].get("stat", "Average"), m[-1]["period"]) for m in widget["metrics"]]
    assert stats == [
        ("Average", demand_metric.PUBLISH_INTERVAL_S),
        ("Average", gpu_metric.PERIOD_S),
        ("Maximum", demand_metric.PUBLISH_INTERVAL_S),
    ]
    marks = [a["value"] for a in widget["annotations"]["horizontal"]]
    fp = fast_path.fast_path(spec)
    target = spec.scaling.target_concurrency_per_task
    assert marks == ([target, fp.threshold] if fp is not None else [target])
    titles = [w["properties"].get("title") for w in body["widgets"]]
    assert ("Fast path: 10-second alarm" in titles) == (fp is not None)
    if fp is not None:
        fast_id, _ = _fast_alarm(t)
        (alarm_widget,) = [
            w
            for w in body["widgets"]
            if w["properties"].get("title") == "Fast path: 10-second alarm"
        ]
        assert alarm_widget["properties"]["annotations"]["alarms"] == ["TOKEN"]
        assert {"Fn::GetAtt": [fast_id, "Arn"]} in parts
    # Every missing-metric alarm is on the status widget.
    for k, a in _alarms(t).items():
        if _is_missing_alarm(a):
            assert {"Fn::GetAtt": [k, "Arn"]} in parts
    # No GPU target line unless the GPU guard tracks it.
    (gpu_widget,) = [
        w["properties"]
        for w in body["widgets"]
        if w["properties"].get("title") == "GPU utilization (%)"
    ]
    gpu_marks = [a["value"] for a in gpu_widget.get("annotations", {}).get("horizontal", [])]
    assert gpu_marks == ([spec.scaling.gpu_target_percent] if spec.scaling.gpu_guard else [])
