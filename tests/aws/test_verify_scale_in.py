"""aws/verify_scale_in: the first scale-in, read off AWS-shaped activities (botocore Stubber)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from botocore.stub import Stubber

from ecs_gpu.aws import verify_scale_in as vsi
from support.stubbed import offline_client

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def test_the_first_scale_in_counts_from_the_last_scale_out() -> None:
    """The fast path may still add after verify saw the rise: the scale-in is judged
    from the count the last scale-out set (botocore Stubber, AWS-shaped answers)."""
    c = offline_client("application-autoscaling")
    rid = "service/vllm-g5/vllm-g5"

    def act(policy: str, at_s: int, to: int) -> dict[str, object]:
        return {
            "ActivityId": f"a-{at_s}",
            "ServiceNamespace": "ecs",
            "ResourceId": rid,
            "ScalableDimension": "ecs:service:DesiredCount",
            "Description": f"Setting desired count to {to}.",
            "Cause": f"monitor alarm {policy}-alarm in state ALARM triggered policy {policy}",
            "StartTime": T0 + timedelta(seconds=at_s),
            "StatusCode": "Successful",
        }

    remover = {
        "PolicyARN": "arn:aws:autoscaling:us-east-1:123456789012:scalingPolicy:1:resource/ecs/"
        f"{rid}:policyName/in",
        "PolicyName": "in",
        "ServiceNamespace": "ecs",
        "ResourceId": rid,
        "ScalableDimension": "ecs:service:DesiredCount",
        "PolicyType": "StepScaling",
        "StepScalingPolicyConfiguration": {
            "AdjustmentType": "PercentChangeInCapacity",
            "StepAdjustments": [{"MetricIntervalUpperBound": 0.0, "ScalingAdjustment": -25}],
        },
        "CreationTime": T0,
    }
    with Stubber(c) as st:
        st.add_response("describe_scaling_policies", {"ScalingPolicies": [remover]})
        st.add_response(
            "describe_scaling_activities",
            {"ScalingActivities": [act("in", 160, 2), act("out", 50, 3), act("out", 20, 2)]},
        )
        d = vsi.first_scale_in(c, rid, since=T0 + timedelta(seconds=30), before=2)
    # The one at 20 s is before the low phase; the one at 50 s raised the count to 3.
    assert d is not None and (d.policy, d.before, d.after, d.removed) == ("in", 3, 2, 1)
    assert d.removers == ("in",)
