"""``verify scaling``'s evidence after the test: who made the first scale-out decision.

Application Auto Scaling's scaling activities since the test began
(:func:`activities_since`), the policy an activity's Cause names
(:func:`policy_in_cause`), the first of them (:func:`first_decision`) and the verdict on
it (:func:`judge`): the fast path's step policy, or why not. ``verify wake`` and the fast
scale-in's verdict (:mod:`ecs_gpu.aws.verify_scale_in`) read the activities the same way.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any, Literal

from ecs_gpu.aws.errors import mapped
from ecs_gpu.aws.verify_step_paths import step_policies

if TYPE_CHECKING:
    from mypy_boto3_application_autoscaling import ApplicationAutoScalingClient


@dataclass(frozen=True)
class Decision:
    """One Application Auto Scaling activity: who changed desiredCount, and how."""

    start: datetime
    cause: str
    description: str
    status: str
    # The step-scaling (fast path) policy's name, when the cause names it.
    fast_path_policy: str | None
    # Every StepScaling policy of the fast path's shape (empty: no fast path deployed).
    step_policies: tuple[str, ...] = ()


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


def policy_in_cause(names: Sequence[str], cause: str) -> str | None:
    """The policy of ``names`` an activity's Cause says fired ("... triggered policy
    NAME ..."); the longest when several match, so a name inside another is not taken."""
    found = [n for n in names if f"policy {n}" in cause]
    return max(found, key=len) if found else None


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


@dataclass(frozen=True)
class Verdict:
    """Who made the first scale-out decision, and how long after the first datapoint.

    ``by``: ``fast_path`` (its step policy); ``lacking`` (the service lacks the
    fast path, as :func:`ecs_gpu.aws.verify_step_paths.check_fast_path` said);
    ``not_deployed`` (no StepScaling policy at all); ``too_slow`` (the fast path
    is there, target tracking was first).
    """

    decision: Decision
    after_s: float
    by: Literal["fast_path", "lacking", "not_deployed", "too_slow"]


def judge(d: Decision, *, since: datetime, missing: str | None = None) -> Verdict:
    """The verdict on the first decision ``d`` of a test that started at ``since``."""
    after = (d.start - since).total_seconds()
    if d.fast_path_policy is not None:
        return Verdict(d, after, "fast_path")
    if missing is not None:
        return Verdict(d, after, "lacking")
    if not d.step_policies:
        return Verdict(d, after, "not_deployed")
    return Verdict(d, after, "too_slow")
