"""Scale to zero on synthesized templates (infra/scaling.py): the wake and sleep alarms and
policies, the schedule, and the policies that keep a task, on tests/infra/scaling_cases.py's
specs."""

from __future__ import annotations

from typing import Any

import pytest

from ecs_gpu.contracts import demand_metric
from ecs_gpu.design.paths import sleep, wake
from ecs_gpu.infra.scaling import (
    CPU_POLICY_ID,
    SLEEP_POLICY_ID,
    WAKE_POLICY_ID,
)
from ecs_gpu.spec import Spec
from ecs_gpu.template.validate import ValidationReport

from .scaling_cases import (
    NAMES,
    SPECS,
    STEP_POLICY,
    T,
    _alarms,
    _concurrency_plain,
    _policies,
    _valid,
    parsed_specs,
    validated_reports,
)
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
