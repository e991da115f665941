"""``verify scaling``'s evidence after the test: the scaling activities since it began.

Application Auto Scaling's scaling activities since the test began
(:func:`activities_since`) and the first of them as a
:class:`~ecs_gpu.checks.verify.decision.Decision` (:func:`first_decision`);
:mod:`ecs_gpu.checks.verify.decision` judges it. ``verify wake`` and the fast
scale-in's verdict (:mod:`ecs_gpu.aws.verify_scale_in`) read the activities the same way.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any

from ecs_gpu.aws.errors import mapped
from ecs_gpu.aws.verify_step_paths import step_policies
from ecs_gpu.checks.verify.decision import Decision, policy_in_cause

if TYPE_CHECKING:
    from mypy_boto3_application_autoscaling import ApplicationAutoScalingClient


def activities_since(
    appscaling: ApplicationAutoScalingClient, resource_id: str, *, since: datetime
) -> list[dict[str, Any]]:
    """The service's scaling activities that started at or after ``since``, oldest first."""
    found: list[dict[str, Any]] = []
    with mapped("application-autoscaling", "DescribeScalingActivities"):
        pages = appscaling.get_paginator("describe_scaling_activities").paginate(
            ServiceNamespace="ecs",
            ResourceId=resource_id,
            ScalableDimension="ecs:service:DesiredCount",
        )
        for page in pages:
            found += [dict(a) for a in page.get("ScalingActivities", []) if a["StartTime"] >= since]
    return sorted(found, key=lambda x: x["StartTime"])


def first_decision(
    appscaling: ApplicationAutoScalingClient, resource_id: str, *, since: datetime
) -> Decision | None:
    """The first scaling activity on the service that started at or after ``since``.

    Application Auto Scaling writes the alarm and the policy that fired into
    the activity's Cause ("monitor alarm X in state ALARM triggered policy Y
    ..."), so a step policy's name there means the fast path decided. The
    other step paths' policies (step_shape) never are the fast path.
    """
    fast = [p.name for p in step_policies(appscaling, resource_id) if p.shape == "fast_path"]
    found = activities_since(appscaling, resource_id, since=since)
    if not found:
        return None
    a = found[0]
    cause = a.get("Cause", "")
    return Decision(
        start=a["StartTime"],
        cause=cause,
        description=a.get("Description", ""),
        status=a.get("StatusCode", ""),
        fast_path_policy=policy_in_cause(fast, cause),
        step_policies=tuple(fast),
    )
