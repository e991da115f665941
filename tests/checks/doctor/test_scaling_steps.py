"""The step paths doctor judges (checks/doctor/scaling_steps.py): the fast path (SCL005) and
the fast scale-in (SCL007); the breakage of each check is in tests/support/doctor_cases.py."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from ecs_gpu.aws.facts import COLLECTION_KEY
from ecs_gpu.checks.doctor import run_checks
from ecs_gpu.design.paths import fast_path
from support.doctor_cases import (
    Snap,
    _drop_policy,
    _fast_alarm,
    _ids,
)
from support.snapshot_variants import FAST_ALARM, SCALE_IN_ALARM, as_concurrency, concurrency_spec
from support.snapshots import NAMES, validate_snapshot


def test_spec_without_the_fast_path_step_policy_is_scl005(healthy: Callable[[], Snap]) -> None:
    s = healthy()
    as_concurrency(s)
    _drop_policy(s, "fast-scale-out")
    fp = fast_path.fast_path(concurrency_spec())
    assert fp is not None
    f = next(f for f in run_checks(s).findings if f.id == "SCL005")
    assert f.severity == "error"
    assert f.title == "The fast path's StepScaling policy is missing"
    assert f.evidence[0].value == {
        "concurrency": "TargetTrackingScaling",
        "cpu": "TargetTrackingScaling",
        "fast-scale-in": "StepScaling",  # only removes: SCL007's, not the fast path
    }
    assert f"threshold {fp.threshold:g}" in f.fix and "ecs-gpu deploy" in f.fix
    # A spec with fast_scale_out = false deploys none: quiet.
    s[COLLECTION_KEY]["target"]["fast_path_threshold"] = None
    assert "SCL005" not in _ids(s)


def test_fast_path_unknown_without_the_spec(healthy: Callable[[], Snap]) -> None:
    s = healthy()
    as_concurrency(s, signal_in_target=False)
    _drop_policy(s, "fast-scale-out")
    scl005 = next(r for r in run_checks(s).results if r.check.id == "SCL005")
    assert scl005.status == "unknown" and "ecs-gpu doctor SPEC" in scl005.reason


def test_step_policy_without_an_alarm_is_scl005(healthy: Callable[[], Snap]) -> None:
    s = healthy()
    as_concurrency(s)
    s["alarms"] = [a for a in s["alarms"] if a["AlarmName"] != FAST_ALARM]
    step = next(p for p in s["scaling_policies"] if p["PolicyName"] == "fast-scale-out")
    f = next(f for f in run_checks(s).findings if f.id == "SCL005")
    assert f.title == "The fast path's alarm does not exist"
    assert (f.evidence[1].kind, f.evidence[1].id) == ("alarms", FAST_ALARM)
    assert (
        f"aws cloudformation create-change-set --stack-name {NAMES.stack} --change-set-name "
        "ecs-gpu-revert-drift"
    ) in f.fix and "--deployment-mode REVERT_DRIFT" in f.fix
    assert "ecs-gpu deploy" not in f.fix
    # Without the stack's name (--cluster/--service) doctor cannot quote it.
    s[COLLECTION_KEY]["target"]["stack"] = None
    f = next(f for f in run_checks(s).findings if f.id == "SCL005")
    assert "create-change-set" not in f.fix and "`ecs-gpu doctor SPEC` names the stack" in f.fix
    s[COLLECTION_KEY]["target"]["stack"] = NAMES.stack
    step["Alarms"] = []
    f = next(f for f in run_checks(s).findings if f.id == "SCL005")
    assert f.title == "No alarm invokes the fast path's step policy"
    assert f.evidence[0].value == []


def test_fast_alarm_found_through_its_actions(healthy: Callable[[], Snap]) -> None:
    # The policy's Alarms list is empty, but the collected alarm invokes it.
    s = healthy()
    as_concurrency(s)
    next(p for p in s["scaling_policies"] if p["PolicyName"] == "fast-scale-out")["Alarms"] = []
    assert next(r for r in run_checks(s).results if r.check.id == "SCL005").status == "ok"


def test_fast_alarm_on_another_series_or_period_is_scl005(healthy: Callable[[], Snap]) -> None:
    s = healthy()
    as_concurrency(s)
    alarm = _fast_alarm(s)
    alarm["Dimensions"] = [{"Name": "ServiceName", "Value": NAMES.service}]
    alarm["Period"] = 60
    f = next(f for f in run_checks(s).findings if f.id == "SCL005")
    assert {e.field: e.value for e in f.evidence} == {
        "Dimensions": [{"Name": "ServiceName", "Value": NAMES.service}],
        "Period": 60,
    }
    assert f"period 60 s (want {fast_path.ALARM_PERIOD_S} s)" in f.fix
    assert "dimensions ServiceName=" in f.fix


def test_fast_alarm_threshold_comes_from_the_spec(healthy: Callable[[], Snap]) -> None:
    # The expected threshold is fast_path.threshold(spec), as collected; none without a spec.
    s = healthy()
    as_concurrency(s)
    s[COLLECTION_KEY]["target"]["fast_path_threshold"] = 12.0
    f = next(f for f in run_checks(s).findings if f.id == "SCL005")
    deployed = fast_path.threshold(concurrency_spec())
    assert f"threshold {deployed:g} (want 12)" in f.fix
    s = healthy()
    as_concurrency(s, signal_in_target=False)
    _fast_alarm(s)["Threshold"] = 24.0
    assert "SCL005" not in _ids(s)


def _fast_policy(s: Snap) -> dict[str, Any]:
    return next(
        p
        for p in s["scaling_policies"]
        if p.get("PolicyType") == "StepScaling"
        and p["StepScalingPolicyConfiguration"].get("AdjustmentType") == "PercentChangeInCapacity"
        and p["StepScalingPolicyConfiguration"]["StepAdjustments"][0]["ScalingAdjustment"] > 0
    )


def test_a_fast_path_cooldown_from_before_the_launch_datapoint_is_reported(
    healthy: Callable[[], Snap],
) -> None:
    # A stack deployed when the cooldown was the instance warm-up alone: 60 s short.
    s = healthy()
    as_concurrency(s)
    assert "SCL005" not in _ids(s)
    want = fast_path.cooldown_s(concurrency_spec())
    _fast_policy(s)["StepScalingPolicyConfiguration"]["Cooldown"] = want - 60
    f = next(f for f in run_checks(s).findings if f.id == "SCL005")
    assert f.title == "The fast path's step policy differs from the spec's"
    assert f"Cooldown {want - 60} (want {want})" in f.fix and "ecs-gpu deploy" in f.fix
    # The aggregation is the template's whatever the spec; without the spec the
    # cooldown is not known, so only it goes unjudged.
    s = healthy()
    as_concurrency(s, signal_in_target=False)
    policy = _fast_policy(s)["StepScalingPolicyConfiguration"]
    policy["Cooldown"] = want - 60
    assert "SCL005" not in _ids(s)
    policy["MetricAggregationType"] = "Average"
    f = next(f for f in run_checks(s).findings if f.id == "SCL005")
    assert "MetricAggregationType Average (want Maximum)" in f.fix and "Cooldown" not in f.fix


def test_fast_alarm_without_data_is_a_warning(healthy: Callable[[], Snap]) -> None:
    s = healthy()
    as_concurrency(s)
    _fast_alarm(s)["StateValue"] = "INSUFFICIENT_DATA"
    f = next(f for f in run_checks(s).findings if f.id == "SCL005")
    assert f.severity == "warning" and f.title == "The fast path's alarm has no data"
    assert f.evidence[0].value == "INSUFFICIENT_DATA" and "MET005" in f.fix


def test_fast_path_needs_the_alarms_only_on_concurrency(healthy: Callable[[], Snap]) -> None:
    s = healthy()
    del s["alarms"]
    assert next(r for r in run_checks(s).results if r.check.id == "SCL005").status == "ok"
    s = healthy()
    as_concurrency(s)
    del s["alarms"]
    scl005 = next(r for r in run_checks(s).results if r.check.id == "SCL005")
    assert scl005.status == "unknown" and "alarms" in scl005.reason


# --- SCL007: the fast scale-in ------------------------------------------------------------------


def test_healthy_fast_scale_in_is_ok_and_a_missing_one_is_scl007(
    healthy: Callable[[], Snap],
) -> None:
    s = healthy()
    as_concurrency(s)
    assert next(r for r in run_checks(s).results if r.check.id == "SCL007").status == "ok"
    _drop_policy(s, "fast-scale-in")
    f = next(f for f in run_checks(s).findings if f.id == "SCL007")
    assert f.severity == "error"
    assert f.title == "The fast scale-in's StepScaling policy is missing"
    assert "15 low minutes" in f.fix and "ecs-gpu deploy" in f.fix
    # A spec with fast_scale_in = false deploys none: quiet.
    s[COLLECTION_KEY]["target"]["fast_scale_in_threshold"] = None
    assert "SCL007" not in _ids(s)


def test_fast_scale_in_unknown_without_the_spec(healthy: Callable[[], Snap]) -> None:
    s = healthy()
    as_concurrency(s, signal_in_target=False)
    _drop_policy(s, "fast-scale-in")
    scl007 = next(r for r in run_checks(s).results if r.check.id == "SCL007")
    assert scl007.status == "unknown" and "ecs-gpu doctor SPEC" in scl007.reason


def test_fast_scale_in_alarm_on_a_plain_series_or_another_threshold_is_scl007(
    healthy: Callable[[], Snap],
) -> None:
    s = healthy()
    as_concurrency(s)
    alarm = next(a for a in s["alarms"] if a["AlarmName"] == SCALE_IN_ALARM)
    alarm["Threshold"] = 4.0
    alarm["Metrics"][1]["MetricStat"]["Period"] = 60
    f = next(f for f in run_checks(s).findings if f.id == "SCL007")
    assert "threshold 4 (want 8)" in f.fix and "period 60 s (want 10 s)" in f.fix
    assert {(e.kind, e.id) for e in f.evidence} == {("alarms", SCALE_IN_ALARM)}
    # An alarm edited by hand: a redeploy of the unchanged spec would change nothing.
    assert "a redeploy of the unchanged spec changes nothing" in f.fix
    assert "--deployment-mode REVERT_DRIFT" in f.fix
    # Without the spec the threshold and expression are not compared: the period still is.
    s[COLLECTION_KEY]["target"].pop("fast_scale_in_threshold")
    f = next(f for f in run_checks(s).findings if f.id == "SCL007")
    assert "threshold" not in f.fix and "period 60 s" in f.fix


def test_fast_scale_in_is_quiet_on_a_gpu_signal(healthy: Callable[[], Snap]) -> None:
    s = healthy()
    assert "SCL007" not in _ids(s)
    assert next(r for r in run_checks(s).results if r.check.id == "SCL007").status == "ok"


@pytest.mark.parametrize(
    ("check_id", "alarm", "effect"),
    [
        ("SCL005", FAST_ALARM, "waits for target tracking's one-minute datapoints"),
        ("SCL007", SCALE_IN_ALARM, "keeps its tasks for target tracking's 15 low minutes"),
    ],
)
def test_a_step_path_alarm_with_its_actions_disabled(
    healthy: Callable[[], Snap], check_id: str, alarm: str, effect: str
) -> None:
    # The fast path's (or fast scale-in's) alarm as the spec deploys it, left disabled:
    # it goes to ALARM and never invokes its step policy.
    s = healthy()
    as_concurrency(s)
    assert not [f for f in run_checks(s).findings if f.id == check_id]
    next(a for a in s["alarms"] if a["AlarmName"] == alarm)["ActionsEnabled"] = False
    validate_snapshot(s)
    (f,) = [f for f in run_checks(s).findings if f.id == check_id]
    assert f.severity == "error" and f.title.endswith("alarm's actions are disabled")
    assert ("alarms", alarm, "ActionsEnabled", False) in [
        (e.kind, e.id, e.field, e.value) for e in f.evidence
    ]
    assert f.fix.endswith(f"Fix: aws cloudwatch enable-alarm-actions --alarm-names {alarm}")
    assert effect in f.fix
