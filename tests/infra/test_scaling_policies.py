"""Concurrency signal, fast path, GPU guard and CPU policy, on synthesized templates.

Each spec below is validated once (synth, cfn-lint, cdk-nag). The alarm and
the policies mirror CloudWatch's and Application Auto Scaling's API shapes,
so they are also checked against botocore's service models.
"""

from __future__ import annotations

import json
from typing import Any

import botocore.session
import pytest
from botocore.model import StructureShape
from botocore.validate import ParamValidator

from ecs_gpu.contracts import demand_metric, gpu_metric
from ecs_gpu.contracts.naming import Names
from ecs_gpu.contracts.signals import CONCURRENCY, SERIES
from ecs_gpu.design import Design, startup
from ecs_gpu.design.paths import fast_path, fast_scale_in, sleep, wake
from ecs_gpu.infra import observability
from ecs_gpu.infra.scaling import (
    CPU_POLICY_ID,
    FAST_PATH_POLICY_ID,
    FAST_SCALE_IN_POLICY_ID,
    SLEEP_POLICY_ID,
    WAKE_POLICY_ID,
)
from ecs_gpu.spec import Spec, parse_spec
from ecs_gpu.template.validate import ValidationReport

from .conftest import ALERT_EMAILS, G5
from .test_template import task_gpu_queries
from .tpl import render, resources

T = dict[str, Any]
METRICS = '\n[service.metrics]\npreset = "vllm"\n'


def _scaling(keys: str) -> str:
    return G5.replace("[scaling]\n", "[scaling]\n" + keys) + METRICS


SPECS = {
    # The defaults that follow from [service.metrics]: signal concurrency, fast path on.
    "concurrency": _scaling("target_concurrency_per_task = 16\n"),
    "concurrency-guard-email": _scaling(
        "target_concurrency_per_task = 8\npanic_threshold_percent = 150\ngpu_guard = true\n"
    )
    + ALERT_EMAILS,
    "concurrency-no-fast-path": _scaling(
        "target_concurrency_per_task = 16\nfast_scale_out = false\n"
    ),
    "concurrency-fast-scale-in": _scaling(
        "target_concurrency_per_task = 16\nfast_scale_in = true\n"
    ),
    # Scale to zero: the wake path on the load balancer's requests, and a night schedule.
    "zero-alb": _scaling("target_concurrency_per_task = 16\n")
    .replace("min_instances = 1", "min_instances = 0")
    .replace("min_tasks = 1", "min_tasks = 0")
    + '\n[load_balancer]\nscheme = "internal"\n'
    + '\n[[scaling.schedule]]\ncron = "0 20 * * ? *"\nmin_tasks = 0\nmax_tasks = 0\n'
    + '\n[[scaling.schedule]]\ncron = "0 8 ? * MON-FRI *"\nmin_tasks = 0\nmax_tasks = 4\n',
    # The sidecars' series is the requests in flight: the sleep alarm adds it.
    "zero-alb-in-flight": _scaling(
        'target_concurrency_per_task = 16\ndemand_estimate = "in-flight"\n'
    )
    .replace("min_instances = 1", "min_instances = 0")
    .replace("min_tasks = 1", "min_tasks = 0")
    + '\n[load_balancer]\nscheme = "internal"\n',
    # A 15-minute model load: the sleep alarm's window outlasts it (wake.quiet_minutes),
    # and the request-count policy holds target tracking's scale-in until it serves
    # (without it the spec is refused: wake.unprotected_wake).
    "zero-alb-slow-model": _scaling("target_concurrency_per_task = 16\n")
    .replace("min_instances = 1", "min_instances = 0")
    .replace("min_tasks = 1", "min_tasks = 0")
    .replace("mean_request_s = 8.0\n", "mean_request_s = 8.0\nmodel_load_s = 900\n")
    + '\n[load_balancer]\nscheme = "internal"\nrequest_count_target = 60\n',
    # Without a load balancer: only the schedule wakes it.
    "zero-schedule": _scaling("target_concurrency_per_task = 16\n").replace(
        "min_tasks = 1", "min_tasks = 0"
    )
    + '\n[[scaling.schedule]]\ncron = "0 8 ? * MON-FRI *"\nmin_tasks = 1\nmax_tasks = 4\n',
}
NAMES = Names("vllm-g5")
STEP_POLICY = "StepScaling"


@pytest.fixture(scope="module")
def specs() -> dict[str, Spec]:
    return {k: parse_spec(text, f"{k}.toml") for k, text in SPECS.items()}


@pytest.fixture(scope="module")
def reports(specs: dict[str, Spec]) -> dict[str, ValidationReport]:
    from ecs_gpu.template.validate import validate

    return {k: validate(spec, path=k) for k, spec in specs.items()}


@pytest.fixture(params=sorted(SPECS))
def case(
    request: pytest.FixtureRequest, specs: dict[str, Spec], reports: dict[str, ValidationReport]
) -> tuple[Spec, T]:
    return specs[request.param], reports[request.param].template


def _policies(t: T, policy_type: str) -> dict[str, dict[str, Any]]:
    return {
        k: r["Properties"]
        for k, r in resources(t, "AWS::ApplicationAutoScaling::ScalingPolicy").items()
        if r["Properties"]["PolicyType"] == policy_type
    }


def _tracking(t: T) -> list[dict[str, Any]]:
    return [
        p["TargetTrackingScalingPolicyConfiguration"]
        for p in _policies(t, "TargetTrackingScaling").values()
    ]


def _custom(t: T) -> list[dict[str, Any]]:
    return [
        c["CustomizedMetricSpecification"]
        for c in _tracking(t)
        if "CustomizedMetricSpecification" in c
    ]


def _alarms(t: T) -> dict[str, dict[str, Any]]:
    return {k: r["Properties"] for k, r in resources(t, "AWS::CloudWatch::Alarm").items()}


def _is_missing_alarm(a: dict[str, Any]) -> bool:
    """A missing-metric alarm in its plain form: missing data is breaching."""
    return a["TreatMissingData"] == "breaching" and not a.get("AlarmDescription", "").startswith(
        "Sleep path"
    )


def _concurrency_plain() -> dict[str, Any]:
    """The concurrency series in a plain metric form, spelled from the contract."""
    return {
        "Namespace": demand_metric.NAMESPACE,
        "MetricName": demand_metric.METRIC_NAME,
        "Dimensions": demand_metric.dimensions(NAMES.cluster, NAMES.service),
    }


def _fast_out_policies(t: T) -> dict[str, dict[str, Any]]:
    return {k: p for k, p in _policies(t, STEP_POLICY).items() if FAST_PATH_POLICY_ID in k}


def _fast_in_policies(t: T) -> dict[str, dict[str, Any]]:
    return {k: p for k, p in _policies(t, STEP_POLICY).items() if FAST_SCALE_IN_POLICY_ID in k}


def _fast_alarm(t: T) -> tuple[str, dict[str, Any]]:
    found = [(k, a) for k, a in _alarms(t).items() if a.get("Period") == fast_path.ALARM_PERIOD_S]
    assert len(found) == 1, sorted(_alarms(t))
    return found[0]


# --- botocore: the template mirrors the API shapes ------------------------------------------

_SESSION = botocore.session.get_session()


def _input_shape(service: str, operation: str) -> StructureShape:
    shape = _SESSION.get_service_model(service).operation_model(operation).input_shape
    assert isinstance(shape, StructureShape)
    return shape


def _valid(service: str, operation: str, params: dict[str, Any]) -> None:
    report = ParamValidator().validate(params, _input_shape(service, operation))
    assert not report.has_errors(), report.generate_report()


def _concrete(value: Any) -> Any:
    """CloudFormation intrinsics replaced by an ARN-shaped string, for the API validator."""
    if isinstance(value, dict) and set(value) <= {"Ref", "Fn::GetAtt", "Fn::Join"}:
        return "arn:aws:sns:us-east-1:123456789012:" + render(value).strip("${}").replace(".", "-")
    if isinstance(value, dict):
        return {k: _concrete(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_concrete(v) for v in value]
    return value


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


# --- the fast path -----------------------------------------------------------------------------


def test_fast_path_alarm_fires_within_30_seconds_at_the_panic_threshold(
    case: tuple[Spec, T],
) -> None:
    spec, t = case
    if not spec.scaling.fast_scale_out_enabled:
        assert not _fast_out_policies(t)
        periods = {a.get("Period", gpu_metric.PERIOD_S) for a in _alarms(t).values()}
        assert periods == {gpu_metric.PERIOD_S}
        return
    (step_id,) = _fast_out_policies(t)
    _, alarm = _fast_alarm(t)
    assert {k: alarm[k] for k in ("Namespace", "MetricName", "Dimensions")} == (
        _concurrency_plain()
    )
    assert alarm["Statistic"] == "Average"
    # High resolution: the series is stored at 1 s, published every 10 s.
    assert demand_metric.STORAGE_RESOLUTION == 1
    assert alarm["Period"] == 10 >= demand_metric.PUBLISH_INTERVAL_S
    assert (alarm["DatapointsToAlarm"] + 1) * alarm["Period"] <= 30
    assert alarm["DatapointsToAlarm"] <= alarm["EvaluationPeriods"]
    target = spec.scaling.target_concurrency_per_task
    assert target is not None
    assert alarm["Threshold"] == pytest.approx(target * spec.scaling.panic_threshold_percent / 100)
    assert alarm["ComparisonOperator"] == fast_path.COMPARISON == "GreaterThanOrEqualToThreshold"
    assert alarm["EvaluationPeriods"] == fast_path.EVALUATION_PERIODS
    assert alarm["DatapointsToAlarm"] == fast_path.DATAPOINTS_TO_ALARM
    assert alarm["Statistic"] == fast_path.STATISTIC
    # A missing series must not launch GPU instances (the missing-metric alarm reports it).
    assert alarm["TreatMissingData"] == "notBreaching"
    assert alarm["AlarmActions"] == [{"Ref": step_id}]


def test_fast_path_policy_adds_in_proportion_to_the_excess(case: tuple[Spec, T]) -> None:
    spec, t = case
    fp = fast_path.fast_path(spec)
    steps = _fast_out_policies(t)
    if fp is None:
        assert not steps
        return
    ((_, policy),) = steps.items()
    cfg = policy["StepScalingPolicyConfiguration"]
    # The template says what fast_path.py (and so the simulator) says.
    assert cfg["AdjustmentType"] == fast_path.ADJUSTMENT_TYPE == "PercentChangeInCapacity"
    assert cfg["MetricAggregationType"] == fp.aggregation == fast_path.METRIC_AGGREGATION
    assert fp.aggregation == "Maximum"
    assert cfg["MinAdjustmentMagnitude"] == fast_path.MIN_ADJUSTMENT_MAGNITUDE == 1
    assert cfg["Cooldown"] == fp.cooldown_s
    got = [
        (
            s["MetricIntervalLowerBound"],
            s.get("MetricIntervalUpperBound"),
            s["ScalingAdjustment"],
        )
        for s in cfg["StepAdjustments"]
    ]
    assert got == [(s.lower, s.upper, s.percent) for s in fp.steps]
    # Never removes: scale-in stays with target tracking.
    assert all(s["ScalingAdjustment"] > 0 for s in cfg["StepAdjustments"])
    assert all(s["MetricIntervalLowerBound"] >= 0 for s in cfg["StepAdjustments"])
    # Knative's panic sizing at each step's lower edge, e.g. 2x target -> +100 %.
    target = fp.target
    for lower, _, percent in got:
        needed = (alarm_threshold(t) + lower) / target * 100 - 100
        assert needed - 1 < percent <= max(needed, 1)


# --- the fast scale-in -------------------------------------------------------------------------


def test_fast_scale_in_alarm_reads_per_task_concurrency_on_one_task_fewer(
    case: tuple[Spec, T],
) -> None:
    spec, t = case
    fsi = fast_scale_in.fast_scale_in(spec)
    policies = _fast_in_policies(t)
    # Metric-math alarms other than the wake and sleep paths' and, at zero, the
    # missing-metric ones (tested below).
    low = {
        k: a
        for k, a in _alarms(t).items()
        if "Metrics" in a
        and "wake path" not in a.get("AlarmDescription", "")
        and not a.get("AlarmDescription", "").startswith(("No ", "Sleep path"))
    }
    if fsi is None:
        assert not policies and not low
        return
    (policy_id,) = policies
    ((_, alarm),) = low.items()
    assert alarm["AlarmActions"] == [{"Ref": policy_id}]
    assert alarm["ComparisonOperator"] == fast_scale_in.COMPARISON == "LessThanThreshold"
    # Target tracking's scale-in guard: one task fewer must still read below the target.
    assert alarm["Threshold"] == fsi.threshold == fsi.target
    assert alarm["EvaluationPeriods"] == alarm["DatapointsToAlarm"] == 12
    assert alarm["TreatMissingData"] == "notBreaching"
    by_id = {m["Id"]: m for m in alarm["Metrics"]}
    (expr,) = [m for m in alarm["Metrics"] if m.get("ReturnData")]
    assert expr["Expression"] == fast_scale_in.expression(fsi.threshold, fsi.period_s)
    k = fsi.period_s // demand_metric.PUBLISH_INTERVAL_S
    assert expr["Expression"] == f"IF(n > {k}, s / (n - {k}), {fsi.threshold:g})"
    for qid, stat in ((fast_scale_in.SUM_ID, "Sum"), (fast_scale_in.COUNT_ID, "SampleCount")):
        ms = by_id[qid]["MetricStat"]
        assert ms["Metric"] == _concurrency_plain()
        assert ms["Period"] == fast_scale_in.ALARM_PERIOD_S == 10
        assert ms["Stat"] == stat


def test_fast_scale_in_policy_removes_a_bounded_fraction(case: tuple[Spec, T]) -> None:
    spec, t = case
    fsi = fast_scale_in.fast_scale_in(spec)
    if fsi is None:
        assert spec.scaling.fast_scale_in is not True  # off unless asked for
        return
    ((_, policy),) = _fast_in_policies(t).items()
    cfg = policy["StepScalingPolicyConfiguration"]
    assert cfg["AdjustmentType"] == fast_scale_in.ADJUSTMENT_TYPE == "PercentChangeInCapacity"
    assert cfg["MetricAggregationType"] == fast_scale_in.METRIC_AGGREGATION == "Maximum"
    assert cfg["MinAdjustmentMagnitude"] == 1
    assert cfg["Cooldown"] == fsi.cooldown_s == 60
    got = [
        (s.get("MetricIntervalLowerBound"), s["MetricIntervalUpperBound"], s["ScalingAdjustment"])
        for s in cfg["StepAdjustments"]
    ]
    assert got == [(s.lower, s.upper, -s.percent) for s in fsi.steps]
    thr = fsi.threshold
    assert got == [(-0.1 * thr, 0, -1), (-0.25 * thr, -0.1 * thr, -10), (None, -0.25 * thr, -25)]
    # Target tracking keeps its scale-in: the 15-minute path stays as the backstop.
    assert all(not c.get("DisableScaleIn", False) for c in _tracking(t))


def alarm_threshold(t: T) -> float:
    threshold: float = _fast_alarm(t)[1]["Threshold"]
    return threshold


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


# --- scale to zero: the wake path and the schedule ---------------------------------------


def _target(t: T) -> dict[str, Any]:
    (target,) = resources(t, "AWS::ApplicationAutoScaling::ScalableTarget").values()
    props: dict[str, Any] = target["Properties"]
    return props


def _wake_alarm(t: T) -> dict[str, Any]:
    found = [a for a in _alarms(t).values() if "wake path" in a.get("AlarmDescription", "")]
    assert len(found) == 1, sorted(_alarms(t))
    return found[0]


def test_the_wake_alarm_reads_requests_only_while_no_task_runs(
    reports: dict[str, ValidationReport],
) -> None:
    t = reports["zero-alb"].template
    alarm = _wake_alarm(t)
    queries = {q["Id"]: q for q in alarm["Metrics"]}
    (expr,) = [q for q in alarm["Metrics"] if "Expression" in q]
    assert expr["Expression"] == wake.EXPRESSION and expr["ReturnData"] is True
    want = {
        wake.REQUESTS_ID: (wake.ELB_NAMESPACE, wake.REQUESTS_METRIC, wake.ELB_STATISTIC),
        wake.REJECTED_ID: (wake.ELB_NAMESPACE, wake.REJECTED_METRIC, wake.ELB_STATISTIC),
        wake.RUNNING_ID: (wake.RUNNING_NAMESPACE, wake.RUNNING_METRIC, wake.RUNNING_STATISTIC),
    }
    for qid, (ns, name, stat) in want.items():
        ms = queries[qid]["MetricStat"]
        assert (ms["Metric"]["Namespace"], ms["Metric"]["MetricName"], ms["Stat"]) == (
            ns,
            name,
            stat,
        )
        assert ms["Period"] == wake.PERIOD_S and queries[qid]["ReturnData"] is False
    lb = {
        d["Name"]: d["Value"]
        for d in queries[wake.REQUESTS_ID]["MetricStat"]["Metric"]["Dimensions"]
    }
    assert render(lb[wake.ELB_DIMENSION]).endswith(".LoadBalancerFullName}")
    running = queries[wake.RUNNING_ID]["MetricStat"]["Metric"]["Dimensions"]
    assert {d["Name"]: d["Value"] for d in running} == {
        "ClusterName": NAMES.cluster,
        "ServiceName": NAMES.service,
    }
    assert alarm["ComparisonOperator"] == wake.COMPARISON
    assert (alarm["Threshold"], alarm["EvaluationPeriods"], alarm["DatapointsToAlarm"]) == (
        wake.THRESHOLD,
        wake.EVALUATION_PERIODS,
        wake.DATAPOINTS_TO_ALARM,
    )
    assert alarm["TreatMissingData"] == "notBreaching"
    (policy_id,) = [k for k in _policies(t, STEP_POLICY) if WAKE_POLICY_ID in k]
    assert alarm["AlarmActions"] == [{"Ref": policy_id}]
    # What doctor (SCL008) and verify scaling compare a deployed alarm with is what the
    # template writes; a stale missing-data setting is told.
    assert wake.alarm_differences(alarm, NAMES.cluster, NAMES.service) == []
    stale = {**alarm, "TreatMissingData": "breaching"}
    assert wake.alarm_differences(stale, NAMES.cluster, NAMES.service)


def test_the_wake_policy_adds_one_task_to_the_running_count(
    specs: dict[str, Spec], reports: dict[str, ValidationReport]
) -> None:
    t = reports["zero-alb"].template
    (policy,) = [p for k, p in _policies(t, STEP_POLICY).items() if WAKE_POLICY_ID in k]
    cfg = policy["StepScalingPolicyConfiguration"]
    assert cfg["AdjustmentType"] == wake.ADJUSTMENT_TYPE
    assert cfg["StepAdjustments"] == [
        {"MetricIntervalLowerBound": 0, "ScalingAdjustment": wake.TASKS_ADDED}
    ]
    assert cfg["Cooldown"] == wake.cooldown_s(specs["zero-alb"])
    assert wake.is_wake_policy(policy) and wake.policy_differences(policy) == []


def _sleep_alarm(t: T) -> dict[str, Any]:
    found = [
        a for a in _alarms(t).values() if a.get("AlarmDescription", "").startswith("Sleep path")
    ]
    assert len(found) == 1, sorted(_alarms(t))
    return found[0]


@pytest.mark.parametrize("key", ["zero-alb", "zero-alb-in-flight", "zero-alb-slow-model"])
def test_the_sleep_alarm_waits_the_longest_request_without_one(
    key: str, specs: dict[str, Spec], reports: dict[str, ValidationReport]
) -> None:
    t = reports[key].template
    alarm = _sleep_alarm(t)
    sp = sleep.sleep_path(specs[key])
    assert sp is not None and sp.in_flight is (key == "zero-alb-in-flight")
    (expr,) = [q for q in alarm["Metrics"] if "Expression" in q]
    want_expr = sleep.IN_FLIGHT_EXPRESSION if sp.in_flight else sleep.REQUESTS
    assert expr["Expression"] == want_expr and expr["ReturnData"] is True
    # Read only while a task runs (c: ECS's CPU datapoint); 1, never quiet, otherwise.
    assert want_expr.startswith("IF(FILL(c, 0) > 0, FILL(r, 0) + FILL(e, 0) + FILL(a, 0)")
    assert want_expr.endswith(", 1)")
    queries = {q["Id"]: q["MetricStat"] for q in alarm["Metrics"] if "MetricStat" in q}
    want = {
        wake.REQUESTS_ID: (wake.ELB_NAMESPACE, wake.REQUESTS_METRIC, wake.ELB_STATISTIC),
        wake.REJECTED_ID: (wake.ELB_NAMESPACE, wake.REJECTED_METRIC, wake.ELB_STATISTIC),
        # A response streaming past the quiet minutes holds its connection.
        sleep.CONNECTIONS_ID: (wake.ELB_NAMESPACE, "ActiveConnectionCount", "Sum"),
        # The gate: a task the wake just started has no CPU datapoint until RUNNING.
        wake.RUNNING_ID: (wake.RUNNING_NAMESPACE, wake.RUNNING_METRIC, wake.RUNNING_STATISTIC),
    }
    if sp.in_flight:
        want[sleep.IN_FLIGHT_ID] = (demand_metric.NAMESPACE, demand_metric.METRIC_NAME, "Maximum")
    assert {
        qid: (ms["Metric"]["Namespace"], ms["Metric"]["MetricName"], ms["Stat"])
        for qid, ms in queries.items()
    } == want
    assert all(ms["Period"] == 60 for ms in queries.values())
    if sp.in_flight:
        dims = queries[sleep.IN_FLIGHT_ID]["Metric"]["Dimensions"]
        assert dims == _concurrency_plain()["Dimensions"]
    # Ten quiet minutes: the ALB's idle timeout (600 s), the longest request it lets
    # stand, which g5's 60-s model loads within; a 15-minute load gets 25 (900 x 1.5 +
    # the ALB's 60 s, in minutes, + the minute the task turns RUNNING in).
    minutes = 25 if key == "zero-alb-slow-model" else 10
    assert alarm["EvaluationPeriods"] == alarm["DatapointsToAlarm"] == minutes == sp.minutes
    assert alarm["ComparisonOperator"] == "LessThanOrEqualToThreshold"
    assert alarm["Threshold"] == 0
    # Gated, every period with a task has a value; none at all: already at zero.
    assert alarm["TreatMissingData"] == "notBreaching"
    (policy_id,) = [k for k in _policies(t, STEP_POLICY) if SLEEP_POLICY_ID in k]
    # botocore's PutMetricAlarm shape checks it with the others
    # (test_alarms_match_the_cloudwatch_api).
    assert alarm["AlarmActions"] == [{"Ref": policy_id}]
    # What doctor (SCL010) compares a deployed alarm with is what the template writes.
    # The template's queries, in-flight series and load balancer token included.
    assert sleep.alarm_differences(alarm, NAMES.cluster, NAMES.service) == []
    # The wake alarm's load balancer, which doctor holds the sleep alarm to.
    lb = wake.load_balancer_of(_wake_alarm(t))
    assert lb is not None
    assert sleep.alarm_differences(alarm, NAMES.cluster, NAMES.service, lb) == []
    stale = {**alarm, "TreatMissingData": "breaching"}
    assert sleep.alarm_differences(stale, NAMES.cluster, NAMES.service)


def test_the_sleep_policy_sets_exactly_zero(reports: dict[str, ValidationReport]) -> None:
    t = reports["zero-alb"].template
    (policy,) = [p for k, p in _policies(t, STEP_POLICY).items() if SLEEP_POLICY_ID in k]
    assert sleep.is_sleep_policy(policy)  # doctor tells it from the other step policies
    cfg = policy["StepScalingPolicyConfiguration"]
    assert cfg["AdjustmentType"] == sleep.ADJUSTMENT_TYPE == "ExactCapacity"
    # Any value at or below the threshold (0): the one step, no lower bound.
    assert cfg["StepAdjustments"] == [{"MetricIntervalUpperBound": 0, "ScalingAdjustment": 0}]
    # Re-invoked each minute in ALARM: each sets the same 0. botocore's
    # PutScalingPolicy shape checks it (test_policies_match_the_application_auto_scaling_api).
    assert cfg["Cooldown"] == sleep.COOLDOWN_S == 60


def test_only_a_service_with_a_wake_path_gets_the_sleep_path(
    specs: dict[str, Spec], reports: dict[str, ValidationReport]
) -> None:
    for key, spec in specs.items():
        t = reports[key].template
        got = [k for k in _policies(t, STEP_POLICY) if SLEEP_POLICY_ID in k]
        assert len(got) == (wake.wake_path(spec) is not None), key


def test_the_schedule_becomes_scheduled_actions_in_utc(
    reports: dict[str, ValidationReport],
) -> None:
    target = _target(reports["zero-alb"].template)
    assert target["MinCapacity"] == 0
    assert [(a["Schedule"], a["ScalableTargetAction"]) for a in target["ScheduledActions"]] == [
        ("cron(0 20 * * ? *)", {"MinCapacity": 0, "MaxCapacity": 0}),
        ("cron(0 8 ? * MON-FRI *)", {"MinCapacity": 0, "MaxCapacity": 4}),
    ]
    # No time zone: Application Auto Scaling reads cron in UTC (aws-semantics §10).
    assert all("Timezone" not in a for a in target["ScheduledActions"])
    for a in target["ScheduledActions"]:
        params = {
            "ServiceNamespace": "ecs",
            "ResourceId": NAMES.scalable_target_resource_id,
            "ScalableDimension": "ecs:service:DesiredCount",
            **a,
        }
        _valid("application-autoscaling", "PutScheduledAction", params)


def test_without_a_load_balancer_the_schedule_is_the_only_wake(
    reports: dict[str, ValidationReport],
) -> None:
    t = reports["zero-schedule"].template
    assert [k for k in _policies(t, STEP_POLICY) if WAKE_POLICY_ID in k] == []
    (action,) = _target(t)["ScheduledActions"]
    assert action["ScalableTargetAction"] == {"MinCapacity": 1, "MaxCapacity": 4}


@pytest.mark.parametrize("key", ["zero-alb", "zero-schedule"])
def test_at_zero_the_cpu_policy_leaves_the_scale_in_vote(
    key: str, reports: dict[str, ValidationReport]
) -> None:
    t = reports[key].template
    (cpu,) = [p for k, p in _policies(t, "TargetTrackingScaling").items() if CPU_POLICY_ID in k]
    assert cpu["TargetTrackingScalingPolicyConfiguration"]["DisableScaleIn"] is True
    notes = [n for n in reports[key].notes if n.id == "scale-to-zero"]
    assert len(notes) == 1 and "first request after zero waits" in notes[0].message
    # Only the load balancer's requests can tell the sleep alarm the service is idle.
    sleeps = "10 min without a request or an open connection the sleep" in notes[0].message
    assert sleeps is (key == "zero-alb")


def test_the_note_says_why_a_slow_model_sleeps_later(
    reports: dict[str, ValidationReport],
) -> None:
    (note,) = [n for n in reports["zero-alb-slow-model"].notes if n.id == "scale-to-zero"]
    assert "After 25 min without a request or an open connection" in note.message
    assert "(25, not 10: a woken task counts as running while its model loads, about 15 min" in (
        note.message
    )
    (g5,) = [n for n in reports["zero-alb"].notes if n.id == "scale-to-zero"]
    assert "not 10" not in g5.message


def test_with_tasks_kept_the_cpu_policy_scales_in(reports: dict[str, ValidationReport]) -> None:
    t = reports["concurrency"].template
    (cpu,) = [p for k, p in _policies(t, "TargetTrackingScaling").items() if CPU_POLICY_ID in k]
    assert "DisableScaleIn" not in cpu["TargetTrackingScalingPolicyConfiguration"]
    assert [n for n in reports["concurrency"].notes if n.id == "scale-to-zero"] == []
    assert "ScheduledActions" not in _target(t)


@pytest.mark.parametrize("key", sorted(SPECS))
def test_at_zero_the_missing_metric_alarms_wait_for_a_running_task(
    key: str, specs: dict[str, Spec], reports: dict[str, ValidationReport]
) -> None:
    t = reports[key].template
    missing = [a for a in _alarms(t).values() if a["AlarmDescription"].startswith("No ")]
    assert len(missing) == 2  # the GPU series and the concurrency series
    for a in missing:
        if not wake.scales_to_zero(specs[key]):
            assert "Metrics" not in a and a["TreatMissingData"] == "breaching"
            continue
        # With no task both series are expected to be missing: 0 then, -1 only while
        # a task runs without them; so no data at all is not breaching.
        (expr,) = [q for q in a["Metrics"] if "Expression" in q]
        assert expr["Expression"] == wake.MISSING_EXPRESSION
        running = next(q for q in a["Metrics"] if q["Id"] == wake.RUNNING_ID)["MetricStat"]
        assert running["Metric"]["MetricName"] == wake.RUNNING_METRIC
        assert running["Stat"] == wake.RUNNING_STATISTIC
        (series,) = [q for q in a["Metrics"] if q["Id"] == wake.SERIES_ID]
        assert series["MetricStat"]["Period"] == running["Period"] == 60
        assert a["TreatMissingData"] == "notBreaching" and a["Threshold"] == 0
