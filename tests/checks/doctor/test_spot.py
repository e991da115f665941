"""Doctor on a [capacity.spot] deployment: ASG009, SVC003, LT003, ALM003 (breakages in
tests/support/doctor_cases.py)."""

from __future__ import annotations

import base64
import copy
from collections.abc import Callable
from typing import Any

from ecs_gpu.checks.doctor import run_checks
from ecs_gpu.design.spot import DRAIN_FLAG
from support.doctor_cases import Snap, _found, spot_interrupted
from support.snapshot_variants import as_spot, as_spot_od0
from support.snapshots import NAMES, validate_snapshot

SPOT_CHECKS = ("ASG009", "SVC003", "LT003", "ALM003")


def _spot(healthy: Callable[[], Snap]) -> Snap:
    s = healthy()
    as_spot(s)
    validate_snapshot(s)
    return s


def test_a_spot_deployment_as_the_template_makes_it_gives_no_finding(
    healthy: Callable[[], Snap],
) -> None:
    report = run_checks(_spot(healthy))
    assert [f.as_dict() for f in report.findings] == []
    assert report.unknown == []
    assert set(SPOT_CHECKS) <= set(report.as_dict()["ok"])


def test_other_weights_are_a_warning_naming_both_strategies(healthy: Callable[[], Snap]) -> None:
    s = _spot(healthy)
    s["services"][0]["capacityProviderStrategy"][1]["weight"] = 50
    (f,) = _found(s, "SVC003")
    assert f.severity == "warning"
    assert "base 0, weight 50" in str(f.evidence[0].value) and "weight 70" in f.fix
    # A hand edit survives a deploy (CloudFormation compares templates): the fix
    # restores the spec's strategy on the service itself, every provider named.
    svc = s["services"][0]
    cluster = svc["clusterArn"].rsplit("/", 1)[-1]
    want = s["_collection"]["target"]
    spot = want["spot"]
    items = (
        f"capacityProvider={want['capacity_provider']},base={spot['on_demand_base']},"
        f"weight={100 - spot['spot_percent']} "
        f"capacityProvider={spot['capacity_provider']},base=0,weight={spot['spot_percent']}"
    )
    assert (
        f"aws ecs update-service --cluster {cluster} --service {svc['serviceName']} "
        f"--capacity-provider-strategy {items} --force-new-deployment"
    ) in f.fix
    assert "a deploy does not undo it" in f.fix


def test_without_a_spot_spec_the_strategy_is_not_checked(healthy: Callable[[], Snap]) -> None:
    s = _spot(healthy)
    s["_collection"]["target"]["spot"] = None
    s["services"][0]["capacityProviderStrategy"] = s["services"][0]["capacityProviderStrategy"][:1]
    assert _found(s, "SVC003") == []


def test_an_on_demand_group_replacing_a_stopped_instance_is_no_spot_interruption(
    healthy: Callable[[], Snap],
) -> None:
    s = healthy()
    spot_interrupted(s)
    s["scaling_activities"][-1]["AutoScalingGroupName"] = NAMES.asg
    assert _found(s, "ASG009") == []


def test_draining_set_by_a_script_is_found(healthy: Callable[[], Snap]) -> None:
    # The ECS guide's way: a shell script that appends the line to ecs.config.
    s = _spot(healthy)
    script = f"#!/bin/bash\necho '{DRAIN_FLAG}=true' >> /etc/ecs/ecs.config\n"
    data = s["launch_template_versions"][-1]["LaunchTemplateData"]
    data["UserData"] = base64.b64encode(script.encode()).decode()
    assert _found(s, "LT003") == []
    del data["UserData"]
    (f,) = _found(s, "LT003")
    assert f.evidence[0].value == "no user data"


def _alarm(s: Snap, name: str) -> dict[str, Any]:
    (a,) = [a for a in s["alarms"] if a["AlarmName"] == name]
    return a


def test_a_spot_stack_without_its_alarms_is_told_to_redeploy(healthy: Callable[[], Snap]) -> None:
    s = _spot(healthy)
    s["alarms"] = [a for a in s["alarms"] if a["AlarmName"] != NAMES.spot_capacity_shortfall_alarm]
    (f,) = _found(s, "ALM003")
    assert f.severity == "warning" and f.title == "A Spot group alarm does not exist"
    assert f.evidence[0].id == NAMES.spot_capacity_shortfall_alarm
    # A stack from before the alarm gets it from a redeploy; one whose alarm was deleted by
    # hand does not (unchanged template): a drift-aware change set puts it back.
    assert "from before it, `ecs-gpu deploy` adds it" in f.fix
    assert (
        f"aws cloudformation create-change-set --stack-name {NAMES.stack} --change-set-name "
        "ecs-gpu-revert-drift --change-set-type UPDATE --use-previous-template --parameters "
        "ParameterKey=GpuAmiId,UsePreviousValue=true --capabilities CAPABILITY_IAM "
        "CAPABILITY_NAMED_IAM --deployment-mode REVERT_DRIFT;"
    ) in f.fix
    assert f"aws cloudformation execute-change-set --stack-name {NAMES.stack}" in f.fix


def test_a_firing_shortfall_is_an_error_naming_the_way_out(healthy: Callable[[], Snap]) -> None:
    s = _spot(healthy)
    a = _alarm(s, NAMES.spot_capacity_shortfall_alarm)
    a["StateValue"] = "ALARM"
    (f,) = _found(s, "ALM003")
    assert f.severity == "error" and f.title == "The Spot group is short of Spot capacity"
    assert "on_demand_base" in f.fix and "PROVISIONING" in f.fix
    # The redeploy it advises is a strategy change, which deploy now forces.
    assert "forces the new deployment ECS needs" in f.fix
    # Without actions nobody heard it: the fix says so.
    assert "Nobody was told" in f.fix
    a["AlarmActions"] = ["arn:aws:sns:us-east-1:123456789012:oncall"]
    (f,) = _found(s, "ALM003")
    assert "Nobody was told" not in f.fix


def test_a_firing_spot_gpu_alarm_points_at_the_spot_hosts(healthy: Callable[[], Snap]) -> None:
    s = _spot(healthy)
    _alarm(s, NAMES.spot_gpu_metric_missing_alarm)["StateValue"] = "ALARM"
    (f,) = _found(s, "ALM003")
    assert f.title == "The Spot group's GPU metric is missing" and "--probe-hosts" in f.fix


def test_the_spot_gpu_alarm_is_no_scaling_alarm_without_data(healthy: Callable[[], Snap]) -> None:
    # It reads the GPU series (metric math), but it is a missing-metric alarm, not ALM001's.
    s = _spot(healthy)
    _alarm(s, NAMES.spot_gpu_metric_missing_alarm)["StateValue"] = "INSUFFICIENT_DATA"
    assert _found(s, "ALM001") == []
    assert _found(s, "ALM003") == []


def test_without_spot_no_spot_alarm_is_expected(healthy: Callable[[], Snap]) -> None:
    s = healthy()
    assert _found(s, "ALM003") == []
    assert "ALM003" in run_checks(s).as_dict()["ok"]


def test_a_spot_launch_without_capacity_names_the_strategy_as_the_way_out(
    healthy: Callable[[], Snap],
) -> None:
    s = _spot(healthy)
    s["scaling_activities"].insert(
        0,
        {
            "ActivityId": "6f4c2d3e-bbbb-4ccc-8ddd-1e2f3a4b5c6d",
            "AutoScalingGroupName": NAMES.spot_asg,
            # The code and words a Spot group's failed activity was seen to carry
            # (aws-semantics §11 "No Spot capacity"); the rest is the activity's frame.
            "Description": "Launching a new EC2 instance.  Status Reason: Could not launch Spot "
            "Instances. UnfulfillableCapacity. Launching EC2 instance failed.",
            "Cause": "At 2026-11-29T17:00:10Z an instance was started in response to a difference "
            "between desired and actual capacity, increasing the capacity from 0 to 1.",
            "StartTime": "2026-11-29T17:00:10+00:00",
            "EndTime": "2026-11-29T17:00:11+00:00",
            "StatusCode": "Failed",
            "StatusMessage": "Could not launch Spot Instances. UnfulfillableCapacity. Launching "
            "EC2 instance failed.",
            "Progress": 100,
        },
    )
    (f,) = _found(s, "ASG001")
    assert "UnfulfillableCapacity" in str(f.evidence[0].value)
    assert "on_demand_base" in f.fix and "PROVISIONING" in f.fix
    assert "forces the new deployment ECS needs" in f.fix


def _od_gpu_alarm(s: Snap) -> dict[str, Any]:
    (a,) = [a for a in s["alarms"] if a["AlarmName"] == NAMES.gpu_metric_missing_alarm]
    return a


def test_without_base_the_gated_on_demand_gpu_alarm_is_judged_as_the_missing_metric_alarm(
    healthy: Callable[[], Snap],
) -> None:
    s = healthy()
    as_spot_od0(s)
    validate_snapshot(s)
    # As the template makes it (base 0, the gated GPU alarm): nothing to say.
    report = run_checks(s)
    assert [f.as_dict() for f in report.findings] == []
    assert {"ALM001", "ALM002", "ALM003", "SVC003"} <= set(report.as_dict()["ok"])
    # Without data it is still the missing-metric alarm, ALM002's, not a scaling alarm
    # without data (ALM001): it reads the GPU series by design.
    _od_gpu_alarm(s)["StateValue"] = "INSUFFICIENT_DATA"
    assert _found(s, "ALM001") == []
    # In ALARM (an On-Demand host in service without the series) it pages as ALM002.
    _od_gpu_alarm(s)["StateValue"] = "ALARM"
    (f,) = _found(s, "ALM002")
    assert "--probe-hosts" in f.fix
    # A scaling alarm of the same form is not exempt: ALM001 still reads it.
    other = copy.deepcopy(_od_gpu_alarm(s))
    other.update(AlarmName="someone-elses-gpu-alarm", StateValue="INSUFFICIENT_DATA")
    s["alarms"].append(other)
    assert [f.evidence[0].id for f in _found(s, "ALM001")] == ["someone-elses-gpu-alarm"]


def _no_gpu_series(s: Snap) -> None:
    for r in s["metric_data"]:
        if r.get("Label", "").startswith("nvidia_smi_"):
            r.update(Values=[], Timestamps=[])


def test_without_base_an_empty_on_demand_group_publishing_nothing_is_no_met001(
    healthy: Callable[[], Snap],
) -> None:
    s = healthy()
    as_spot_od0(s)
    _no_gpu_series(s)
    # An On-Demand host in service without the series: the agent is broken there.
    assert [f.id for f in _found(s, "MET001")] == ["MET001"]
    # Every task on Spot, the On-Demand group at zero: no host to publish, by design.
    s["auto_scaling_groups"][0].update(Instances=[], DesiredCapacity=0)
    validate_snapshot(s)
    assert _found(s, "MET001") == []
    # With a base the group runs the base's task, so an empty one is no design.
    s = healthy()
    as_spot(s)
    _no_gpu_series(s)
    s["auto_scaling_groups"][0].update(Instances=[], DesiredCapacity=0, MinSize=0)
    assert [f.id for f in _found(s, "MET001")] == ["MET001"]


def test_with_a_base_an_empty_on_demand_group_is_a_launch_problem_while_a_task_runs(
    healthy: Callable[[], Snap],
) -> None:
    s = healthy()
    as_spot(s)  # on_demand_base = 1
    _no_gpu_series(s)
    s["auto_scaling_groups"][0].update(Instances=[], DesiredCapacity=0, MinSize=0)
    validate_snapshot(s)
    # The service wants a task and ECS puts the base's first: no host ran, so the fix
    # is the launches (ecs_gpu.design.spot.publishers, as verify metrics), not the agent.
    (f,) = _found(s, "MET001")
    assert (
        f"{NAMES.asg} has no instance in service, yet [capacity.spot] on_demand_base = 1 "
        "puts the first task(s) on it"
    ) in f.fix
    assert "ASG001" in f.fix and "--probe-hosts" not in f.fix
    # Scaled to zero tasks, the group may be empty with a base too: nothing to publish.
    s["services"][0].update(desiredCount=0, runningCount=0)
    s["services"][0]["deployments"][0].update(desiredCount=0, runningCount=0)
    validate_snapshot(s)
    assert _found(s, "MET001") == []


def test_at_spot_percent_0_an_empty_on_demand_group_is_a_launch_problem_without_a_base(
    healthy: Callable[[], Snap],
) -> None:
    # Every task goes On-Demand at Spot weight 0 (the first step of removing
    # [capacity.spot]), so the base of 0 does not excuse an empty group.
    s = healthy()
    as_spot_od0(s)
    _no_gpu_series(s)
    s["auto_scaling_groups"][0].update(Instances=[], DesiredCapacity=0, MinSize=0)
    validate_snapshot(s)
    assert _found(s, "MET001") == []  # spot_percent 70: every task may run on Spot
    s["_collection"]["target"]["spot"]["spot_percent"] = 0
    (f,) = _found(s, "MET001")
    assert "[capacity.spot] spot_percent = 0 puts every task on it" in f.fix
