"""verify scaling's reads before the test (aws/verify_step_paths.py): the service's step
policies and the alarms that invoke them, through a Stubber that holds every call and
answer to botocore's model."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from botocore.stub import Stubber

from ecs_gpu.aws import verify_step_paths as vsp
from ecs_gpu.contracts.naming import Names
from ecs_gpu.design.paths import fast_path as fp
from ecs_gpu.design.paths import sleep, wake
from ecs_gpu.spec import load_spec
from example_specs import G5_PATH
from support.stubbed import offline_client

NAMES = Names("vllm-g5")
RID = NAMES.scalable_target_resource_id
WHERE = {
    "ServiceNamespace": "ecs",
    "ResourceId": RID,
    "ScalableDimension": "ecs:service:DesiredCount",
}


def policy(name: str, kind: str, adjustment: int, alarms: list[str]) -> dict[str, Any]:
    """A step policy as DescribeScalingPolicies lists it."""
    return {
        "PolicyARN": f"arn:aws:autoscaling:us-east-1:123456789012:scalingPolicy:1:resource/ecs/"
        f"{RID}:policyName/{name}",
        "PolicyName": name,
        **WHERE,
        "PolicyType": "StepScaling",
        "StepScalingPolicyConfiguration": {
            "AdjustmentType": kind,
            "StepAdjustments": [{"MetricIntervalLowerBound": 0.0, "ScalingAdjustment": adjustment}],
        },
        "Alarms": [
            {"AlarmName": a, "AlarmARN": f"arn:aws:cloudwatch:us-east-1:123456789012:alarm:{a}"}
            for a in alarms
        ],
        "CreationTime": datetime(2026, 12, 1, tzinfo=UTC),
    }


FAST = policy("vllm-g5-FastScaleOut-1A2B", "PercentChangeInCapacity", 100, ["fast-alarm"])
WAKE = policy("vllm-g5-Wake-9F8E", wake.ADJUSTMENT_TYPE, wake.TASKS_ADDED, ["wake-alarm"])
SLEEP = policy("vllm-g5-Sleep-5B4A", sleep.ADJUSTMENT_TYPE, sleep.TASKS, ["sleep-alarm"])
TRACKING = {**FAST, "PolicyName": "tracking", "PolicyType": "TargetTrackingScaling"}
del TRACKING["StepScalingPolicyConfiguration"]


def test_the_step_policies_are_the_step_scaling_ones_each_as_its_path() -> None:
    appscaling = offline_client("application-autoscaling")
    with Stubber(appscaling) as stub:
        stub.add_response(
            "describe_scaling_policies", {"ScalingPolicies": [TRACKING, FAST, WAKE, SLEEP]}, WHERE
        )
        found = vsp.step_policies(appscaling, RID)
        stub.assert_no_pending_responses()
    assert [(p.name, p.shape, p.alarms) for p in found] == [
        ("vllm-g5-FastScaleOut-1A2B", "fast_path", ("fast-alarm",)),
        ("vllm-g5-Wake-9F8E", "wake", ("wake-alarm",)),
        ("vllm-g5-Sleep-5B4A", "sleep", ("sleep-alarm",)),
    ]


def test_alarms_are_described_a_hundred_names_at_a_time() -> None:
    cw = offline_client("cloudwatch")
    names = [f"alarm-{i:03d}" for i in range(150)]
    with Stubber(cw) as stub:
        for batch in (names[:100], names[100:]):
            stub.add_response(
                "describe_alarms",
                {"MetricAlarms": [{"AlarmName": batch[0]}]},
                {"AlarmNames": batch, "AlarmTypes": ["MetricAlarm"]},
            )
        found = vsp.describe_alarms(cw, names)
        stub.assert_no_pending_responses()
    assert [a["AlarmName"] for a in found] == ["alarm-000", "alarm-100"]


def test_without_a_step_policy_the_fast_path_is_missing_and_no_alarm_is_read() -> None:
    fast = fp.fast_path(load_spec(G5_PATH))
    assert fast is not None
    appscaling, cw = offline_client("application-autoscaling"), offline_client("cloudwatch")
    with Stubber(appscaling) as stub, Stubber(cw):  # any DescribeAlarms would fail: none stubbed
        stub.add_response("describe_scaling_policies", {"ScalingPolicies": [TRACKING]}, WHERE)
        why = vsp.check_fast_path(
            appscaling, cw, fast, resource_id=RID, cluster=NAMES.cluster, service=NAMES.service
        )
        stub.assert_no_pending_responses()
    assert why is not None
    assert why.startswith("the spec has a fast path (a StepScaling policy invoked by an alarm")
    assert f"at or above {fast.threshold:g} over {fast.period_s}-s periods), but {RID} " in why


def test_a_step_policy_whose_alarm_is_gone_is_named_with_it() -> None:
    fast = fp.fast_path(load_spec(G5_PATH))
    assert fast is not None
    appscaling, cw = offline_client("application-autoscaling"), offline_client("cloudwatch")
    with Stubber(appscaling) as a_stub, Stubber(cw) as cw_stub:
        a_stub.add_response("describe_scaling_policies", {"ScalingPolicies": [FAST]}, WHERE)
        cw_stub.add_response(
            "describe_alarms",
            {"MetricAlarms": []},
            {"AlarmNames": ["fast-alarm"], "AlarmTypes": ["MetricAlarm"]},
        )
        why = vsp.check_fast_path(
            appscaling, cw, fast, resource_id=RID, cluster=NAMES.cluster, service=NAMES.service
        )
        cw_stub.assert_no_pending_responses()
    assert why is not None and "fast-alarm" in why


def test_a_service_without_its_zero_paths_is_told_what_it_lacks() -> None:
    appscaling, cw = offline_client("application-autoscaling"), offline_client("cloudwatch")
    with Stubber(appscaling) as stub, Stubber(cw):  # no step policy: no alarm to read
        stub.add_response("describe_scaling_policies", {"ScalingPolicies": [TRACKING]}, WHERE)
        why = vsp.check_zero_paths(appscaling, cw, NAMES, sleep_minutes=10)
        stub.assert_no_pending_responses()
    assert why is not None
    wake_part, sleep_part = why.split("; ")
    assert wake_part.startswith("the spec scales to zero with a load balancer, so it has a wake")
    assert wake_part.endswith(
        f"but {RID} has no such alarm: at zero tasks nothing starts one again"
    )
    assert "invoked after 10 quiet minutes" in sleep_part
    assert sleep_part.endswith(f"but {RID} has no sleep policy")
