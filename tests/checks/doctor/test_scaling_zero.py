"""Scale to zero as doctor judges it (checks/doctor/scaling_zero.py): the wake path (SCL008),
the schedule (SCL009) and the sleep path (SCL010)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from ecs_gpu.aws.facts import COLLECTION_KEY
from ecs_gpu.checks.doctor import run_checks
from ecs_gpu.design.paths import sleep, wake
from support.doctor_cases import (
    LOAD_BALANCER,
    NIGHTS,
    WAKE_ALARM,
    WORKDAYS,
    Snap,
    _ids,
    scheduled_action,
    with_schedule,
    with_wake,
    zero_without_wake,
)
from support.snapshot_variants import SCALE_IN_ALARM, as_concurrency
from support.snapshots import NAMES, validate_snapshot
from support.zero_alarms import sleep_metrics

# --- SCL008: the wake path at MinCapacity 0 --------------------------------------------------


def _scl008(s: Snap) -> Any:
    validate_snapshot(s)
    return next(r for r in run_checks(s).results if r.check.id == "SCL008")


def test_a_deployed_wake_path_is_ok_and_not_mistaken_for_the_fast_path(
    healthy: Callable[[], Snap],
) -> None:
    s = healthy()
    assert _scl008(s).status == "ok"  # MinCapacity 1: nothing to wake
    with_wake(s)
    assert _scl008(s).status == "ok"
    assert not {"SCL005", "SCL008"} & _ids(s)
    as_concurrency(s)  # the fast path beside it: SCL005 judges only its own policy
    assert not {"SCL005", "SCL008"} & _ids(s)


SLEEP_ALARM = f"{NAMES.service}-SleepAlarm-6F5E4D3C2B1A"


def with_sleep(
    s: Snap, missing: str = sleep.TREAT_MISSING_DATA, n: int = sleep.MIN_QUIET_MINUTES
) -> dict[str, Any]:
    """with_wake, then the sleep path's policy and alarm as infra/scaling.py writes them
    (ecs_gpu.design.paths.sleep) over ``n`` quiet minutes; returns the policy."""
    with_wake(s)
    wake_policy = s["scaling_policies"][-1]
    arn = wake_policy["PolicyARN"].replace("/wake", "/sleep")
    alarm_arn = f"arn:aws:cloudwatch:us-east-1:123456789012:alarm:{SLEEP_ALARM}"
    policy = {
        **wake_policy,
        "PolicyName": "sleep",
        "PolicyARN": arn,
        "StepScalingPolicyConfiguration": {
            "AdjustmentType": sleep.ADJUSTMENT_TYPE,
            "StepAdjustments": [{"MetricIntervalUpperBound": 0.0, "ScalingAdjustment": 0}],
            "Cooldown": sleep.COOLDOWN_S,
            "MetricAggregationType": "Maximum",
        },
        "Alarms": [{"AlarmName": SLEEP_ALARM, "AlarmARN": alarm_arn}],
    }
    s["scaling_policies"].append(policy)
    wake_alarm = next(a for a in s["alarms"] if a["AlarmName"] == WAKE_ALARM)
    s["alarms"].append(
        {
            **wake_alarm,
            "AlarmName": SLEEP_ALARM,
            "AlarmArn": alarm_arn,
            "AlarmActions": [arn],
            "StateValue": "ALARM",
            "Metrics": sleep_metrics(LOAD_BALANCER, NAMES.cluster, NAMES.service),
            "EvaluationPeriods": n,
            "DatapointsToAlarm": n,
            "Threshold": sleep.THRESHOLD,
            "ComparisonOperator": sleep.COMPARISON,
            "TreatMissingData": missing,
        }
    )
    return policy


def test_a_deployed_sleep_path_is_ok_and_a_stale_one_is_scl010(
    healthy: Callable[[], Snap],
) -> None:
    s = healthy()
    with_sleep(s)
    validate_snapshot(s)
    assert not {"SCL005", "SCL008", "SCL010"} & _ids(s)
    stale = healthy()
    with_sleep(stale, missing="breaching")
    validate_snapshot(stale)
    (f,) = [f for f in run_checks(stale).findings if f.id == "SCL010"]
    assert f.title == "The sleep alarm differs from ecs-gpu's" and f.severity == "warning"
    assert any(e.field == "TreatMissingData" and e.value == "breaching" for e in f.evidence)


def _sleep_query(s: Snap, qid: str) -> dict[str, Any]:
    alarm = next(a for a in s["alarms"] if a["AlarmName"] == SLEEP_ALARM)
    ms: dict[str, Any] = next(q for q in alarm["Metrics"] if q["Id"] == qid)["MetricStat"]
    return ms


def _scl010(s: Snap) -> Any:
    validate_snapshot(s)
    return next(r for r in run_checks(s).results if r.check.id == "SCL010")


def test_a_sleep_query_on_the_wrong_metric_is_scl010(healthy: Callable[[], Snap]) -> None:
    # Expression, threshold and periods as deployed; r reads the target's requests, which
    # a request answered 503 at zero never reaches: the rest still matches.
    s = healthy()
    with_sleep(s)
    _sleep_query(s, wake.REQUESTS_ID)["Metric"]["MetricName"] = "RequestCountPerTarget"
    (f,) = _scl010(s).findings
    assert f.title == "The sleep alarm differs from ecs-gpu's"
    assert any(
        e.field == "Metrics.r" and "RequestCountPerTarget" in str(e.value) for e in f.evidence
    )
    assert "RequestCount" in f.fix and "ecs-gpu deploy" in f.fix


def test_a_sleep_alarm_on_another_load_balancer_is_scl010(healthy: Callable[[], Snap]) -> None:
    # All of the sleep alarm's ALB queries read a load balancer the wake alarm does not:
    # quiet there, the service is put to sleep while its own ALB serves.
    s = healthy()
    with_sleep(s)
    other = "app/other-alb/fedcba9876543210"
    for qid in (wake.REQUESTS_ID, wake.REJECTED_ID, sleep.CONNECTIONS_ID):
        _sleep_query(s, qid)["Metric"]["Dimensions"] = [
            {"Name": wake.ELB_DIMENSION, "Value": other}
        ]
    (f,) = _scl010(s).findings
    fields = {e.field for e in f.evidence}
    assert {"Metrics.r.Dimensions", "Metrics.e.Dimensions", "Metrics.a.Dimensions"} <= fields
    assert other in f.fix and LOAD_BALANCER in f.fix
    # One query alone on another load balancer (open connections of someone else's).
    s = healthy()
    with_sleep(s)
    _sleep_query(s, sleep.CONNECTIONS_ID)["Metric"]["Dimensions"][0]["Value"] = other
    (f,) = _scl010(s).findings
    assert [e.field for e in f.evidence] == ["Metrics.a.Dimensions"]


def _by_day(healthy: Callable[[], Snap]) -> Snap:
    """A scheduled fleet by day: its spec scales to zero at night behind a load balancer
    (the sleep path and so the wake path recorded), the workday action has set
    MinCapacity 1."""
    s = healthy()
    with_sleep(s)
    with_schedule(s)
    s[COLLECTION_KEY]["target"]["sleep_path"] = True
    s["scalable_targets"][0]["MinCapacity"] = 1
    return s


def test_a_scheduled_fleet_by_day_still_has_its_sleep_alarm_checked(
    healthy: Callable[[], Snap],
) -> None:
    # Daytime: the workday action raised MinCapacity to 1; the spec (min_tasks 0 behind
    # a load balancer) has the sleep path, and tonight its alarm reads the wrong metric.
    s = _by_day(healthy)
    _sleep_query(s, sleep.CONNECTIONS_ID)["Metric"]["MetricName"] = "NewConnectionCount"
    assert "SCL008" not in _ids(s)  # its wake alarm is the one ecs-gpu deploys
    (f,) = _scl010(s).findings
    assert any(e.field == "Metrics.a" for e in f.evidence)
    assert "MinCapacity is 1 now; the sleep alarm acts once it is 0" in f.fix
    # Without the spec the night's scheduled action (MinCapacity 0) says the same.
    s[COLLECTION_KEY]["target"]["sleep_path"] = None
    assert [x.id for x in _scl010(s).findings] == ["SCL010"]
    # No sleep alarm at all, by day: said too.
    s[COLLECTION_KEY]["target"]["sleep_path"] = True
    s["alarms"] = [a for a in s["alarms"] if a["AlarmName"] != SLEEP_ALARM]
    (f,) = _scl010(s).findings
    assert "no sleep alarm invokes" in f.fix and "MinCapacity is 1 now" in f.fix


def test_the_sleep_window_is_the_specs_when_recorded_else_at_least_ten(
    healthy: Callable[[], Snap],
) -> None:
    # The spec's model loads for 12 minutes: its window is 13 (sleep.quiet_minutes), and
    # a ten-minute alarm (deployed before the window knew the load) stops a woken task
    # before it serves.
    s = healthy()
    with_sleep(s)
    s[COLLECTION_KEY]["target"].update(sleep_path=True, sleep_minutes=13)
    (f,) = _scl010(s).findings
    (e,) = f.evidence
    assert e.field == "EvaluationPeriods" and e.value == (10, 10)
    assert "10 periods (want 13 of 13)" in f.fix
    s = healthy()
    with_sleep(s, n=13)
    s[COLLECTION_KEY]["target"].update(sleep_path=True, sleep_minutes=13)
    assert _scl010(s).status == "ok"
    # Without the spec the model is unknown: 13 passes, under ten does not.
    s[COLLECTION_KEY]["target"].update(sleep_path=None, sleep_minutes=None)
    assert _scl010(s).status == "ok"
    s = healthy()
    with_sleep(s, n=9)
    (f,) = _scl010(s).findings
    assert "9 periods (want N of N, N at least 10)" in f.fix


def test_a_scheduled_fleet_by_day_still_has_its_wake_alarm_checked(
    healthy: Callable[[], Snap],
) -> None:
    # Daytime (MinCapacity 1 by the workday action) on a spec with the sleep path, so the
    # wake path too: tonight its alarm, on the tasks' CPU Average, never reads "no task".
    s = _by_day(healthy)
    wake_alarm = next(a for a in s["alarms"] if a["AlarmName"] == WAKE_ALARM)
    c_query = next(q for q in wake_alarm["Metrics"] if q["Id"] == wake.RUNNING_ID)
    c_query["MetricStat"]["Stat"] = "Average"
    (f,) = _scl008(s).findings
    assert f.title == "The wake alarm differs from ecs-gpu's" and f.severity == "error"
    assert "MinCapacity is 1 now; the wake alarm acts once it is 0" in f.fix
    # No wake alarm at all, by day: said too.
    s["alarms"] = [a for a in s["alarms"] if a["AlarmName"] != WAKE_ALARM]
    (f,) = _scl008(s).findings
    assert "no wake alarm invokes" in f.fix and "1 now" in f.fix
    # A spec without the sleep path (nor the wake path) at MinCapacity 1: nothing to wake.
    s[COLLECTION_KEY]["target"]["sleep_path"] = False
    assert _scl008(s).status == "ok"


def test_a_wake_alarm_with_its_actions_disabled_is_scl008(healthy: Callable[[], Snap]) -> None:
    # Left disabled after maintenance: it goes to ALARM at the night's first request and
    # invokes nothing, so the service answers 503 all night.
    s = healthy()
    with_sleep(s)
    assert _scl008(s).status == "ok"
    next(a for a in s["alarms"] if a["AlarmName"] == WAKE_ALARM)["ActionsEnabled"] = False
    (f,) = _scl008(s).findings
    assert f.title == "The wake alarm's actions are disabled" and f.severity == "error"
    assert ("alarms", WAKE_ALARM, "ActionsEnabled", False) in [
        (e.kind, e.id, e.field, e.value) for e in f.evidence
    ]
    assert f"enable-alarm-actions --alarm-names {WAKE_ALARM}" in f.fix and "503" in f.fix
    assert _scl010(s).status == "ok"  # the sleep alarm's own actions are enabled


def test_a_sleep_alarm_with_its_actions_disabled_is_scl010(healthy: Callable[[], Snap]) -> None:
    s = healthy()
    with_sleep(s)
    next(a for a in s["alarms"] if a["AlarmName"] == SLEEP_ALARM)["ActionsEnabled"] = False
    (f,) = _scl010(s).findings
    assert f.title == "The sleep alarm's actions are disabled" and f.severity == "warning"
    assert f"enable-alarm-actions --alarm-names {SLEEP_ALARM}" in f.fix
    assert "15 low minutes" in f.fix
    assert _scl008(s).status == "ok"


def test_a_spec_without_the_sleep_path_is_not_held_to_one(healthy: Callable[[], Snap]) -> None:
    s = healthy()
    with_wake(s)  # MinCapacity 0 and a wake alarm, but the spec has no sleep path (by hand)
    s[COLLECTION_KEY]["target"]["sleep_path"] = False
    assert _scl010(s).status == "ok"
    s[COLLECTION_KEY]["target"]["sleep_path"] = None  # without a spec: MinCapacity 0 says
    assert [f.id for f in _scl010(s).findings] == ["SCL010"]


def test_a_missing_wake_alarm_is_not_read_from_the_sleep_alarm(
    healthy: Callable[[], Snap],
) -> None:
    # Both alarms read the load balancer's RequestCount r: SCL008 judges only the
    # wake policy's alarm, and the sleep alarm is no stale wake alarm.
    s = healthy()
    with_sleep(s)
    s["alarms"] = [a for a in s["alarms"] if a["AlarmName"] != WAKE_ALARM]
    validate_snapshot(s)
    (f,) = [f for f in run_checks(s).findings if f.id == "SCL008"]
    assert f.title == "Nothing wakes the service at zero tasks"
    assert "no wake alarm invokes a step policy" in f.fix
    assert all(e.kind != "alarms" for e in f.evidence)
    assert "SCL010" not in _ids(s)  # without a wake path nothing is said of sleep


def test_without_a_wake_path_nothing_is_said_of_sleep(healthy: Callable[[], Snap]) -> None:
    s = healthy()
    zero_without_wake(s)
    validate_snapshot(s)
    ids = _ids(s)
    assert "SCL008" in ids and "SCL010" not in ids


def test_the_sleep_policy_is_not_mistaken_for_the_fast_path(
    healthy: Callable[[], Snap],
) -> None:
    s = healthy()
    as_concurrency(s)
    sleeper = with_sleep(s)
    # Without the spec, and with no fast path deployed, doctor cannot tell whether the
    # service should have one: unknown, whatever other step policies it has.
    s[COLLECTION_KEY]["target"].pop("fast_path_threshold", None)
    s["scaling_policies"] = [
        p
        for p in s["scaling_policies"]
        if p.get("PolicyType") != "StepScaling" or wake.is_wake_policy(p) or p is sleeper
    ]
    assert sleep.is_sleep_policy(sleeper) and not wake.is_wake_policy(sleeper)
    validate_snapshot(s)
    results = {r.check.id: r for r in run_checks(s).results}
    # Read as the fast path's, the sleep policy (its alarm no fast path's) would be a
    # broken one.
    assert results["SCL005"].status == "unknown"
    assert "no StepScaling policy" in results["SCL005"].reason
    assert results["SCL008"].status == results["SCL010"].status == "ok"


def test_a_stale_wake_alarm_is_scl008_naming_the_field(healthy: Callable[[], Snap]) -> None:
    s = healthy()
    with_wake(s, running_stat="Average")
    f = next(f for f in run_checks(s).findings if f.id == "SCL008")
    assert f.title == "The wake alarm differs from ecs-gpu's"
    assert any(e.field == "Metrics.c" and "Average" in str(e.value) for e in f.evidence)
    assert "ecs-gpu deploy" in f.fix


def test_a_wake_alarm_breaching_on_missing_data_is_scl008(healthy: Callable[[], Snap]) -> None:
    # Every quiet minute at zero has no ALB datapoint: breaching reads each as a request.
    s = healthy()
    with_wake(s)
    next(a for a in s["alarms"] if a["AlarmName"] == WAKE_ALARM)["TreatMissingData"] = "breaching"
    (f,) = _scl008(s).findings
    assert f.title == "The wake alarm differs from ecs-gpu's"
    assert ("TreatMissingData", "breaching") in [(e.field, e.value) for e in f.evidence]


def test_a_wake_policy_with_a_larger_step_is_scl008(healthy: Callable[[], Snap]) -> None:
    s = healthy()
    with_wake(s)
    step = s["scaling_policies"][-1]["StepScalingPolicyConfiguration"]["StepAdjustments"][0]
    step["ScalingAdjustment"] = 3
    (f,) = _scl008(s).findings
    assert f.title == "The wake policy differs from ecs-gpu's" and f.severity == "error"
    (e,) = f.evidence
    assert (e.kind, e.id, e.value) == ("scaling_policies", "wake", [(0.0, None, 3)])
    assert "ecs-gpu deploy" in f.fix


def _zero_without_lb(s: Snap) -> None:
    """MinCapacity 0, no load balancer (so no wake alarm): only a schedule wakes it."""
    s["scalable_targets"][0]["MinCapacity"] = 0


def test_zero_without_a_load_balancer_is_decided_by_the_scheduled_actions(
    healthy: Callable[[], Snap],
) -> None:
    s = healthy()
    _zero_without_lb(s)
    # Nothing scheduled: at zero nothing ever starts a task again.
    r = _scl008(s)
    assert r.status == "finding"
    (f,) = r.findings
    assert f.severity == "error"
    assert f.title == "Nothing wakes the service at zero tasks: no scheduled action raises it"
    assert "[[scaling.schedule]] entry with min_tasks >= 1" in f.fix and "min_tasks = 1" in f.fix
    assert {e.kind for e in f.evidence} == {"scalable_targets", "scheduled_actions"}
    # Only a night-time action (MinCapacity 0): still nothing raises it.
    s["scheduled_actions"] = [scheduled_action("night", NIGHTS, 0, 0)]
    assert _scl008(s).status == "finding"
    # The workday action raises MinCapacity to 1: it wakes.
    s["scheduled_actions"].append(scheduled_action("day", WORKDAYS, 1, 4))
    assert _scl008(s).status == "ok"


@pytest.mark.parametrize(
    ("change", "says"),
    [
        ("ended", "no scheduled action that can still run raises MinCapacity above 0"),
        ("past-at", "no scheduled action that can still run raises MinCapacity above 0"),
        ("suspended", "ScheduledScalingSuspended=false"),
    ],
)
def test_a_scheduled_action_that_never_runs_does_not_wake(
    healthy: Callable[[], Snap], change: str, says: str
) -> None:
    s = healthy()
    _zero_without_lb(s)
    day = scheduled_action("day", WORKDAYS, 1, 4)
    if change == "ended":
        day["EndTime"] = "2026-11-01T00:00:00+00:00"  # before collected_at
    elif change == "past-at":
        day["Schedule"] = "at(2026-11-01T08:00:00)"
    else:
        s["scalable_targets"][0]["SuspendedState"]["ScheduledScalingSuspended"] = True
    s["scheduled_actions"] = [day]
    r = _scl008(s)
    assert r.status == "finding" and says in r.findings[0].fix
    # The same action in the future (or resumed) wakes it.
    s["scheduled_actions"] = [scheduled_action("day", "at(2027-01-04T08:00:00)", 1, 4)]
    s["scalable_targets"][0]["SuspendedState"]["ScheduledScalingSuspended"] = False
    assert _scl008(s).status == "ok"


def test_zero_without_a_load_balancer_and_no_scheduled_actions_is_unknown(
    healthy: Callable[[], Snap],
) -> None:
    s = healthy()
    _zero_without_lb(s)
    del s["scheduled_actions"]
    s[COLLECTION_KEY]["denied"].append(
        {
            "call": "application-autoscaling DescribeScheduledActions",
            "permission": "application-autoscaling:DescribeScheduledActions",
            "code": "AccessDeniedException",
            "kinds": ["scheduled_actions"],
        }
    )
    r = _scl008(s)
    assert r.status == "unknown"
    assert "application-autoscaling:DescribeScheduledActions" in r.reason
    # A kept service does not need them.
    s["scalable_targets"][0]["MinCapacity"] = 1
    assert _scl008(s).status == "ok"


# --- SCL009: the spec's schedule is deployed -------------------------------------------------


def _scl009(s: Snap) -> Any:
    validate_snapshot(s)
    return next(r for r in run_checks(s).results if r.check.id == "SCL009")


def test_a_deployed_schedule_is_ok_and_quiet_without_one(healthy: Callable[[], Snap]) -> None:
    s = healthy()
    assert _scl009(s).status == "ok"  # no spec: nothing to compare with
    with_schedule(s)
    assert _scl009(s).status == "ok"
    # Written another way, the same minutes: MON-FRI is 2-6.
    s["scheduled_actions"][0]["Schedule"] = "cron(0 8 ? * 2-6 *)"
    s["scheduled_actions"][1]["Timezone"] = "Etc/UTC"
    assert _scl009(s).status == "ok"


def test_a_schedule_entry_not_deployed_is_scl009(healthy: Callable[[], Snap]) -> None:
    s = healthy()
    with_schedule(s)
    # An older deployment: the night action at 19:00, before the spec moved it to 20:00.
    s["scheduled_actions"][1]["Schedule"] = "cron(0 19 ? * MON-FRI *)"
    r = _scl009(s)
    (f,) = r.findings
    assert f.title == "A schedule entry is not deployed"
    assert "entry 2 (cron(0 20 ? * MON-FRI *), min_tasks 0, max_tasks 0)" in f.fix
    assert any(
        e.kind == "scheduled_actions" and "cron(0 19 ? * MON-FRI *)" in str(e.value)
        for e in f.evidence
    )
    assert "ecs-gpu deploy" in f.fix


def test_a_schedule_in_another_time_zone_or_suspended_is_scl009(
    healthy: Callable[[], Snap],
) -> None:
    s = healthy()
    with_schedule(s)
    s["scheduled_actions"][0]["Timezone"] = "America/New_York"
    (f,) = _scl009(s).findings
    assert "time zone America/New_York (want UTC" in f.fix
    assert [(e.kind, e.field) for e in f.evidence] == [("scheduled_actions", "Timezone")]
    del s["scheduled_actions"][0]["Timezone"]
    s["scalable_targets"][0]["SuspendedState"]["ScheduledScalingSuspended"] = True
    (f,) = _scl009(s).findings
    assert f.title == "Scheduled scaling is suspended"
    assert "ScheduledScalingSuspended=false" in f.fix


def test_wake_check_reads_alarms_only_at_zero(healthy: Callable[[], Snap]) -> None:
    s = healthy()
    del s["alarms"]  # DescribeAlarms denied, say
    assert next(r for r in run_checks(s).results if r.check.id == "SCL008").status == "ok"
    s["scalable_targets"][0]["MinCapacity"] = 0
    r = next(r for r in run_checks(s).results if r.check.id == "SCL008")
    assert r.status == "unknown" and "alarms missing" in r.reason


def test_a_step_path_alarm_deleted_by_hand_is_put_back_by_a_drift_aware_change_set(
    healthy: Callable[[], Snap],
) -> None:
    # The step policy is there and names its alarm; the alarm is gone. A redeploy of the
    # unchanged stack would not recreate it.
    cases = [("SCL007", as_concurrency, SCALE_IN_ALARM), ("SCL008", with_sleep, WAKE_ALARM)]
    cases.append(("SCL010", with_sleep, SLEEP_ALARM))
    for check_id, deploy, alarm in cases:
        s = healthy()
        deploy(s)
        s["alarms"] = [a for a in s["alarms"] if a["AlarmName"] != alarm]
        (f,) = [f for f in run_checks(s).findings if f.id == check_id]
        assert f"names {alarm}, which DescribeAlarms did not return" in f.fix, check_id
        assert "--deployment-mode REVERT_DRIFT;" in f.fix, check_id
        assert "Fix: redeploy" not in f.fix and "Redeploy with" not in f.fix, check_id
