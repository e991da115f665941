"""Link checks of checks/doctor/capacity.py: launches (ASG001), the warm pool and its hook
(ASG005-ASG007); the breakage of each check is in tests/support/doctor_cases.py."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from ecs_gpu.aws.facts import COLLECTION_KEY
from ecs_gpu.checks.doctor import run_checks
from support.doctor_cases import Snap, _found, _hook, stockout, warm_instance_stuck
from support.snapshot_variants import WARM_IID, as_warm_pool
from support.snapshots import IID, NAMES, validate_snapshot


def test_quota_failure_gets_the_quota_fix(healthy: Callable[[], Snap]) -> None:
    s = healthy()
    stockout(s)
    s["scaling_activities"][0]["StatusMessage"] = (
        "You have requested more vCPU capacity than your current vCPU limit of 0 allows for the "
        "instance bucket that the specified instance type belongs to. (Error Code: "
        "VcpuLimitExceeded)"
    )
    f = next(f for f in run_checks(s).findings if f.id == "ASG001")
    assert "Service Quotas" in f.fix


def test_full_reservation_launch_failure_names_the_group_preference(
    healthy: Callable[[], Snap],
) -> None:
    s = healthy()
    stockout(s)
    s["scaling_activities"][0]["StatusMessage"] = (
        "The specified Capacity Reservation does not have enough available capacity to fulfill "
        "your request. Launching EC2 instance failed. (Error Code: ReservationCapacityExceeded)"
    )
    validate_snapshot(s)
    f = next(f for f in run_checks(s).findings if f.id == "ASG001")
    assert "capacity-reservations-first" in f.fix and "LT002" in f.fix


WARM_CHECKS = ("ASG005", "ASG006", "ASG007")


def _warm(s: Snap) -> Snap:
    as_warm_pool(s)
    validate_snapshot(s)
    return s


def test_a_warm_pool_as_the_spec_deploys_it_gives_no_finding(healthy: Callable[[], Snap]) -> None:
    s = _warm(healthy())
    report = run_checks(s)
    assert [f.as_dict() for f in report.findings] == []
    assert report.unknown == []
    assert set(WARM_CHECKS) <= set(report.as_dict()["ok"])


def test_no_warm_pool_anywhere_needs_none_of_its_kinds(healthy: Callable[[], Snap]) -> None:
    # No spec pool, no group pool: decided without warm_pools and lifecycle_hooks.
    s = healthy()
    assert "warm_pools" not in s and "lifecycle_hooks" not in s
    status = {r.check.id: r.status for r in run_checks(s).results}
    assert {status[i] for i in WARM_CHECKS} == {"ok"}


def test_pool_off_the_spec_is_an_asg005_warning(healthy: Callable[[], Snap]) -> None:
    s = _warm(healthy())
    cfg = s["auto_scaling_groups"][0]["WarmPoolConfiguration"]
    cfg.update(MinSize=0, PoolState="Running", MaxGroupPreparedCapacity=2)
    (f,) = _found(s, "ASG005")
    assert (f.severity, f.title) == ("warning", "The warm pool differs from the spec")
    assert {e.field: e.value for e in f.evidence} == {
        "WarmPoolConfiguration.PoolState": "Running",
        "WarmPoolConfiguration.MinSize": 0,
        "WarmPoolConfiguration.MaxGroupPreparedCapacity": 2,
    }
    # The spec leaves max_prepared unset: the template deploys its default, min_size (1).
    assert "has max_prepared = 1 (set, or its default: min_size)" in f.fix
    # A redeploy of the unchanged stack leaves a change by hand: the spec's values, by hand.
    assert (
        f"aws autoscaling put-warm-pool --auto-scaling-group-name {NAMES.asg} --min-size 1 "
        "--max-group-prepared-capacity 1 --pool-state Stopped."
    ) in f.fix


def test_unset_max_prepared_may_read_back_as_minus_one(healthy: Callable[[], Snap]) -> None:
    # A snapshot collected before the default (its target's max_prepared null).
    s = _warm(healthy())
    s[COLLECTION_KEY]["target"]["warm_pool"]["max_prepared"] = None
    s["auto_scaling_groups"][0]["WarmPoolConfiguration"]["MaxGroupPreparedCapacity"] = -1
    assert _found(s, "ASG005") == []


def test_pool_being_deleted_is_an_asg005_error(healthy: Callable[[], Snap]) -> None:
    s = _warm(healthy())
    s["auto_scaling_groups"][0]["WarmPoolConfiguration"]["Status"] = "PendingDelete"
    (f,) = _found(s, "ASG005")
    assert f.severity == "error" and "being deleted" in f.fix
    assert "Once its delete has finished, put it back" in f.fix
    assert f"put-warm-pool --auto-scaling-group-name {NAMES.asg} --min-size 1" in f.fix


def test_a_warm_pool_or_hook_deleted_by_hand_is_put_back_with_the_specs_values(
    healthy: Callable[[], Snap],
) -> None:
    from support.doctor_cases import no_launch_hook, no_warm_pool

    s = healthy()
    no_warm_pool(s)
    (f,) = _found(s, "ASG005")
    assert (
        f"aws autoscaling put-warm-pool --auto-scaling-group-name {NAMES.asg} --min-size 1 "
        "--max-group-prepared-capacity 1 --pool-state Stopped."
    ) in f.fix
    # An unset max_prepared (an older snapshot) is left out: the group's MaxSize.
    s[COLLECTION_KEY]["target"]["warm_pool"]["max_prepared"] = None
    (f,) = _found(s, "ASG005")
    assert "--min-size 1 --pool-state Stopped." in f.fix
    s = healthy()
    no_launch_hook(s)
    (f,) = _found(s, "ASG006")
    assert (
        f"aws autoscaling put-lifecycle-hook --lifecycle-hook-name {NAMES.asg}-launch "
        f"--auto-scaling-group-name {NAMES.asg} "
        "--lifecycle-transition autoscaling:EC2_INSTANCE_LAUNCHING --heartbeat-timeout 2015 "
        "--default-result CONTINUE."
    ) in f.fix


@pytest.mark.parametrize(
    ("change", "shown"),
    [
        ({"LifecycleHookName": "launch"}, "launch (autoscaling:EC2_INSTANCE_LAUNCHING)"),
        ({"LifecycleTransition": "autoscaling:EC2_INSTANCE_TERMINATING"}, "TERMINATING"),
    ],
    ids=["other-name", "terminating"],
)
def test_hook_the_unit_does_not_complete_is_asg006(
    healthy: Callable[[], Snap], change: dict[str, str], shown: str
) -> None:
    s = _warm(healthy())
    _hook(s).update(change)
    (f,) = _found(s, "ASG006")
    assert f.severity == "error" and shown in str(f.evidence[0].value)
    assert f"named {NAMES.asg}-launch" in f.fix


def test_hook_heartbeat_off_the_spec_is_an_asg006_warning(healthy: Callable[[], Snap]) -> None:
    s = _warm(healthy())
    _hook(s)["HeartbeatTimeout"] = 600
    (f,) = _found(s, "ASG006")
    assert f.severity == "warning" and "another heartbeat" in f.title
    assert [e.value for e in f.evidence] == [600, 2015]
    assert "--heartbeat-timeout 2015 --default-result CONTINUE." in f.fix


def test_without_a_spec_any_launch_hook_will_do(healthy: Callable[[], Snap]) -> None:
    s = _warm(healthy())
    s[COLLECTION_KEY]["target"] = {
        k: v for k, v in s[COLLECTION_KEY]["target"].items() if k in ("cluster", "service")
    }
    _hook(s)["LifecycleHookName"] = "someone-elses-name"
    assert _found(s, "ASG005") == [] and _found(s, "ASG006") == []
    s["lifecycle_hooks"] = []
    (f,) = _found(s, "ASG006")
    assert f.severity == "error"


def test_instance_within_the_heartbeat_is_not_stuck(healthy: Callable[[], Snap]) -> None:
    s = healthy()
    warm_instance_stuck(s)
    assert _found(s, "ASG007")
    s["instances"][1]["LaunchTime"] = "2026-11-29T16:30:00+00:00"  # 1800 s < 2015 s
    assert _found(s, "ASG007") == []


def test_group_instance_waiting_past_the_heartbeat_is_asg007(healthy: Callable[[], Snap]) -> None:
    # A warm start of a Stopped pool restarts the instance: LaunchTime is that start.
    s = _warm(healthy())
    s["auto_scaling_groups"][0]["Instances"][0]["LifecycleState"] = "Pending:Wait"
    s["instances"][0]["LaunchTime"] = "2026-11-29T16:20:00+00:00"
    (f,) = _found(s, "ASG007")
    assert f.evidence[0].kind == "auto_scaling_groups"
    assert f.evidence[0].value == "Pending:Wait" and IID in f.fix
    assert f"{NAMES.host_log_group}, stream {IID}/ecs-gpu-host-setup" in f.fix
    # A Running pool's instance keeps the LaunchTime of its warming: it says nothing.
    s["auto_scaling_groups"][0]["WarmPoolConfiguration"]["PoolState"] = "Running"
    assert _found(s, "ASG007") == []


def test_waiting_instance_without_a_launch_time_is_unknown(healthy: Callable[[], Snap]) -> None:
    s = healthy()
    warm_instance_stuck(s)
    s["instances"] = s["instances"][:1]
    asg007 = next(r for r in run_checks(s).results if r.check.id == "ASG007")
    assert asg007.status == "unknown" and WARM_IID in asg007.reason


def test_denied_warm_pool_is_unknown_naming_the_permission(healthy: Callable[[], Snap]) -> None:
    s = _warm(healthy())
    del s["warm_pools"]
    s[COLLECTION_KEY]["denied"].append(
        {
            "call": "autoscaling DescribeWarmPool",
            "permission": "autoscaling:DescribeWarmPool",
            "code": "AccessDenied",
            "kinds": ["warm_pools"],
        }
    )
    status = {r.check.id: r for r in run_checks(s).results}
    assert status["ASG007"].status == "unknown"
    assert "autoscaling:DescribeWarmPool" in status["ASG007"].reason
    assert status["ASG005"].status == status["ASG006"].status == "ok"


def test_doctor_expects_what_the_template_deploys() -> None:
    """The hook name, heartbeat and pool doctor records are the template's, --stack included."""
    from ecs_gpu.aws.facts import Target
    from ecs_gpu.checks.doctor.capacity import LAUNCHING
    from ecs_gpu.cli.options import names_of
    from ecs_gpu.cli.prelude import synth_template
    from ecs_gpu.infra import capacity
    from support.snapshot_variants import warm_pool_spec

    assert LAUNCHING == capacity.LAUNCHING
    spec = warm_pool_spec()
    for stack in (None, "vllm-g5-staging"):
        template = synth_template(spec, stack)
        resources = template["Resources"].values()
        (group,) = [r for r in resources if r["Type"] == "AWS::AutoScaling::AutoScalingGroup"]
        (pool,) = [r for r in resources if r["Type"] == "AWS::AutoScaling::WarmPool"]
        (hook,) = group["Properties"]["LifecycleHookSpecificationList"]
        want = Target.from_spec(spec, names_of(spec, stack)).warm_pool
        assert want is not None
        assert (hook["LifecycleHookName"], hook["HeartbeatTimeout"]) == (
            want.hook_name,
            want.hook_timeout_s,
        )
        assert hook["LifecycleTransition"] == LAUNCHING
        props = pool["Properties"]
        assert (props["MinSize"], props["PoolState"], props.get("MaxGroupPreparedCapacity")) == (
            want.min_size,
            want.pool_state,
            want.max_prepared,
        )


def _launch_activity(s: Snap, iid: str, start: str, end: str) -> None:
    s["scaling_activities"].insert(
        0,
        {
            "ActivityId": "9a8b7c6d-1111-4222-8333-444455556666",
            "AutoScalingGroupName": NAMES.asg,
            "Description": f"Launching a new EC2 instance into warm pool: {iid}",
            "Cause": "At 2026-11-29T15:10:00Z an instance was launched in response to a warm "
            "pool size change.",
            "StartTime": start,
            "EndTime": end,
            "StatusCode": "Successful",
            "Progress": 100,
        },
    )


def test_an_instance_stuck_on_the_hook_can_be_let_go_now(healthy: Callable[[], Snap]) -> None:
    s = healthy()
    warm_instance_stuck(s)
    (f,) = _found(s, "ASG007")
    assert (
        f"aws autoscaling complete-lifecycle-action --lifecycle-hook-name {NAMES.asg}-launch "
        f"--auto-scaling-group-name {NAMES.asg} --lifecycle-action-result CONTINUE "
        f"--instance-id {WARM_IID}."
    ) in f.fix


def test_a_launch_that_waited_out_the_hooks_heartbeat_is_asg007(
    healthy: Callable[[], Snap],
) -> None:
    # What a timed-out hook leaves once the instance went on: no waiting state, only a
    # launch activity as long as the heartbeat (2015 s here).
    s = healthy()
    as_warm_pool(s)
    assert not [f for f in run_checks(s).findings if f.id == "ASG007"]
    _launch_activity(s, WARM_IID, "2026-11-29T15:10:00+00:00", "2026-11-29T15:43:40+00:00")
    validate_snapshot(s)
    (f,) = [f for f in run_checks(s).findings if f.id == "ASG007"]
    assert f.title == "A launch waited out the launch hook's heartbeat"
    ev = {(e.kind, e.field): e.value for e in f.evidence}
    assert ev[("scaling_activities", "EndTime - StartTime (s)")] == 2020
    assert ev[("lifecycle_hooks", "HeartbeatTimeout")] == 2015
    assert "put it in service (CONTINUE)" in f.fix and WARM_IID in f.fix
    # A launch shorter than the heartbeat: the unit completed the hook.
    s["scaling_activities"][0]["EndTime"] = "2026-11-29T15:20:00+00:00"
    assert not [f for f in run_checks(s).findings if f.id == "ASG007"]
