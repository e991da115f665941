"""Link checks of checks/doctor/alarm.py (the breakage of each check is in
tests/support/doctor_cases.py)."""

from __future__ import annotations

import json
from collections.abc import Callable

from ecs_gpu.checks.doctor import run_checks
from ecs_gpu.contracts import demand_metric
from support.doctor_cases import (
    Snap,
    _fast_alarm,
    _found,
    alarm_no_data,
    concurrency_alarm_no_data,
    missing_alarm_firing,
)
from support.snapshot_variants import FAST_ALARM, as_concurrency
from support.snapshots import NAMES, validate_snapshot


def test_metric_math_alarm_without_data_is_a_gpu_alarm(healthy: Callable[[], Snap]) -> None:
    s = healthy()
    alarm_no_data(s)
    assert "Metrics" in s["alarms"][0]
    assert [f.id for f in run_checks(s).findings if f.id == "ALM001"] == ["ALM001"]


def test_alm002_says_nobody_was_told_when_the_alarm_has_no_actions(
    healthy: Callable[[], Snap],
) -> None:
    s = healthy()
    missing_alarm_firing(s)
    (f,) = [f for f in run_checks(s).findings if f.id == "ALM002"]
    assert "Nobody was told" in f.fix and "[alerts]" in f.fix
    assert any(e.kind == "alarms" and e.field == "AlarmActions" for e in f.evidence)


def test_alm002_with_a_topic_does_not_ask_for_alerts(healthy: Callable[[], Snap]) -> None:
    s = healthy()
    missing_alarm_firing(s)
    topic = "arn:aws:sns:us-east-1:123456789012:gpu-alerts"
    s["alarms"][2]["AlarmActions"] = [topic]
    s["alarms"][2]["OKActions"] = [topic]
    validate_snapshot(s)
    (f,) = [f for f in run_checks(s).findings if f.id == "ALM002"]
    assert "--probe-hosts" in f.fix
    assert "[alerts]" not in f.fix
    assert not any(e.field == "AlarmActions" for e in f.evidence)


def test_concurrency_alarm_without_data_is_alm001(healthy: Callable[[], Snap]) -> None:
    s = healthy()
    concurrency_alarm_no_data(s)
    findings = _found(s, "ALM001")
    assert len(findings) == 2  # AlarmHigh and AlarmLow of the concurrency policy
    f = findings[0]
    assert (f.severity, f.title) == ("error", "Concurrency scaling alarm has no data")
    assert f.evidence[0].value == "INSUFFICIENT_DATA" and "AlarmHigh" in f.evidence[0].id
    assert "MET005" in f.fix and demand_metric.SIDECAR_NAME in f.fix
    # The fast path's own alarm without data is SCL005's warning, not ALM001.
    s = healthy()
    as_concurrency(s)
    _fast_alarm(s)["StateValue"] = "INSUFFICIENT_DATA"
    assert _found(s, "ALM001") == []
    # Without the policies those alarms cannot be told apart: unknown, not ok.
    s = healthy()
    concurrency_alarm_no_data(s)
    del s["scaling_policies"]
    met002 = next(r for r in run_checks(s).results if r.check.id == "ALM001")
    assert met002.status == "unknown" and "scaling_policies" in met002.reason


def test_a_scaling_policys_deleted_alarm_is_alm001(healthy: Callable[[], Snap]) -> None:
    s = healthy()
    s["alarms"] = [a for a in s["alarms"] if not a["AlarmName"].startswith("TargetTracking-")]
    validate_snapshot(s)
    f = next(f for f in run_checks(s).findings if f.id == "ALM001")
    assert f.title == "The scaling policy's alarm does not exist" and f.severity == "error"
    assert f.evidence[0].id == "gpu"
    # A redeploy of the unchanged stack does nothing: the policy is put again as it is.
    policy = next(p for p in s["scaling_policies"] if p["PolicyName"] == "gpu")
    config = policy["TargetTrackingScalingPolicyConfiguration"]
    assert (
        "aws application-autoscaling put-scaling-policy --service-namespace ecs --resource-id "
        f"{NAMES.scalable_target_resource_id} --scalable-dimension ecs:service:DesiredCount "
        "--policy-name gpu --policy-type TargetTrackingScaling "
        f"--target-tracking-scaling-policy-configuration '{json.dumps(config, sort_keys=True)}';"
    ) in f.fix
    assert (
        "aws cloudwatch describe-alarms --alarm-name-prefix "
        f"TargetTracking-{NAMES.scalable_target_resource_id}-"
    ) in f.fix
    assert "ecs-gpu deploy" not in f.fix
    # The CPU policy and the fast path's step policy are not ALM001's.
    s = healthy()
    as_concurrency(s)
    s["alarms"] = [a for a in s["alarms"] if a["AlarmName"] != FAST_ALARM]
    assert "ALM001" not in {f.id for f in run_checks(s).findings}


def test_at_zero_by_design_alarms_without_data_are_expected(healthy: Callable[[], Snap]) -> None:
    s = healthy()
    alarm_no_data(s)
    s["services"][0].update(desiredCount=0, runningCount=0)
    # MinCapacity 1: the service should run a task, so no data is ALM001.
    assert "ALM001" in {f.id for f in run_checks(s).findings}
    # MinCapacity 0 and nothing desired: no task publishes, target tracking's alarms read
    # no data by design (SCL008 checks what wakes the service).
    s["scalable_targets"][0]["MinCapacity"] = 0
    validate_snapshot(s)
    assert "ALM001" not in {f.id for f in run_checks(s).findings}


def test_a_deleted_missing_metric_alarm_is_put_back_by_a_drift_aware_change_set(
    healthy: Callable[[], Snap],
) -> None:
    s = healthy()
    name = s["_collection"]["target"]["missing_metric_alarm"]
    s["alarms"] = [a for a in s["alarms"] if a["AlarmName"] != name]
    (f,) = [f for f in run_checks(s).findings if f.id == "ALM002"]
    assert f.title == "GPU missing-metric alarm does not exist"
    assert "--use-previous-template" in f.fix and "--deployment-mode REVERT_DRIFT;" in f.fix
    assert "ecs-gpu deploy" not in f.fix
    # It reverts all drift: a scheduled minimum or maximum too, which the user must see.
    assert "It reverts every drifted resource of the stack, not only this one" in f.fix
    assert (
        f.fix.index("describe-change-set")
        < f.fix.index("every drifted resource")
        < (f.fix.index("execute-change-set"))
    )
