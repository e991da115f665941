"""The step paths on synthesized templates (infra/scaling.py): the fast path's and the fast
scale-in's alarm and step policy, on tests/infra/scaling_cases.py's specs."""

from __future__ import annotations

import pytest

from ecs_gpu.contracts import demand_metric, gpu_metric
from ecs_gpu.design.paths import fast_path, fast_scale_in
from ecs_gpu.spec import Spec
from ecs_gpu.template.validate import ValidationReport

from .scaling_cases import (
    SPECS,
    T,
    _alarms,
    _concurrency_plain,
    _fast_alarm,
    _fast_in_policies,
    _fast_out_policies,
    _tracking,
    parsed_specs,
    validated_reports,
)


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
