"""verify scaling's evidence after the test (aws/verify_decision.py): the scaling activities
since it began, and the first as a decision, through a Stubber that holds every call and
answer to botocore's model."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from botocore.stub import Stubber

from ecs_gpu.aws import verify_decision as vd
from support.stubbed import offline_client

from .test_verify_step_paths import FAST, RID, TRACKING, WHERE

T0 = datetime(2026, 12, 1, 4, 0, tzinfo=UTC)


def activity(n: int, at: datetime, cause: str) -> dict[str, Any]:
    """A scaling activity as DescribeScalingActivities lists it."""
    return {
        "ActivityId": f"act-{n}",
        **WHERE,
        "Description": f"Setting desired count to {n + 2}.",
        "Cause": cause,
        "StartTime": at,
        "StatusCode": "Successful",
    }


FIRED = f"monitor alarm fast-alarm in state ALARM triggered policy {FAST['PolicyName']}"
TRACKED = "monitor alarm TargetTracking-service/vllm-g5/vllm-g5-AlarmHigh triggered policy tracking"


def test_the_activities_since_the_start_are_read_over_pages_oldest_first() -> None:
    appscaling = offline_client("application-autoscaling")
    before = activity(0, T0 - timedelta(minutes=5), TRACKED)
    late, early = activity(2, T0 + timedelta(minutes=3), TRACKED), activity(1, T0, FIRED)
    with Stubber(appscaling) as stub:
        stub.add_response(
            "describe_scaling_activities",
            {"ScalingActivities": [late, before], "NextToken": "more"},
            WHERE,
        )
        stub.add_response(
            "describe_scaling_activities",
            {"ScalingActivities": [early]},
            {**WHERE, "NextToken": "more"},
        )
        found = vd.activities_since(appscaling, RID, since=T0)
        stub.assert_no_pending_responses()
    assert [a["ActivityId"] for a in found] == ["act-1", "act-2"]


def test_the_first_decision_names_the_fast_path_policy_its_cause_names() -> None:
    appscaling = offline_client("application-autoscaling")
    with Stubber(appscaling) as stub:
        stub.add_response("describe_scaling_policies", {"ScalingPolicies": [TRACKING, FAST]}, WHERE)
        stub.add_response(
            "describe_scaling_activities",
            {
                "ScalingActivities": [
                    activity(2, T0 + timedelta(seconds=90), TRACKED),
                    activity(1, T0 + timedelta(seconds=30), FIRED),
                ]
            },
            WHERE,
        )
        d = vd.first_decision(appscaling, RID, since=T0)
        stub.assert_no_pending_responses()
    assert d is not None
    assert d.start == T0 + timedelta(seconds=30) and d.cause == FIRED
    assert (d.description, d.status) == ("Setting desired count to 3.", "Successful")
    assert d.fast_path_policy == FAST["PolicyName"]
    assert d.step_policies == (FAST["PolicyName"],)


def test_a_decision_target_tracking_made_names_no_step_policy() -> None:
    appscaling = offline_client("application-autoscaling")
    with Stubber(appscaling) as stub:
        stub.add_response("describe_scaling_policies", {"ScalingPolicies": [FAST]}, WHERE)
        stub.add_response(
            "describe_scaling_activities",
            {"ScalingActivities": [activity(1, T0, TRACKED)]},
            WHERE,
        )
        d = vd.first_decision(appscaling, RID, since=T0)
    assert d is not None and d.fast_path_policy is None


def test_no_activity_since_the_start_is_no_decision() -> None:
    appscaling = offline_client("application-autoscaling")
    with Stubber(appscaling) as stub:
        stub.add_response("describe_scaling_policies", {"ScalingPolicies": []}, WHERE)
        stub.add_response(
            "describe_scaling_activities",
            {"ScalingActivities": [activity(0, T0 - timedelta(seconds=1), TRACKED)]},
            WHERE,
        )
        assert vd.first_decision(appscaling, RID, since=T0) is None
        stub.assert_no_pending_responses()
