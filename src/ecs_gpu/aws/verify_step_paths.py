"""``verify scaling``'s reads before the test: the service's step policies and their alarms.

The service's StepScaling policies (each of its step path,
:func:`ecs_gpu.design.paths.step_shape.shape_of`) and the CloudWatch alarms that
invoke them, read once (:func:`read_step_path`); :mod:`ecs_gpu.checks.verify.step_paths`
judges them per path: the fast path (:func:`check_fast_path`), and with a wake path
the wake's and the sleep's (:func:`check_zero_paths`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ecs_gpu.aws.errors import mapped
from ecs_gpu.checks.verify.step_paths import (
    StepPolicy,
    explain_missing_fast_path,
    explain_missing_zero_paths,
)
from ecs_gpu.contracts.naming import Names
from ecs_gpu.design.paths import fast_path as fp
from ecs_gpu.design.paths import wake
from ecs_gpu.design.paths.step_shape import shape_of

if TYPE_CHECKING:
    from mypy_boto3_application_autoscaling import ApplicationAutoScalingClient
    from mypy_boto3_cloudwatch import CloudWatchClient


def step_policies(appscaling: ApplicationAutoScalingClient, resource_id: str) -> list[StepPolicy]:
    """The service's StepScaling policies: the fast path's, the fast scale-in's, the wake's,
    the sleep's."""
    found: list[StepPolicy] = []
    with mapped("application-autoscaling", "DescribeScalingPolicies"):
        pages = appscaling.get_paginator("describe_scaling_policies").paginate(
            ServiceNamespace="ecs",
            ResourceId=resource_id,
            ScalableDimension="ecs:service:DesiredCount",
        )
        for page in pages:
            found += [
                StepPolicy(
                    name=p["PolicyName"],
                    alarms=tuple(a["AlarmName"] for a in p.get("Alarms", [])),
                    shape=shape_of(p),
                    differs=", ".join(d[2] for d in wake.policy_differences(p)),
                )
                for p in page.get("ScalingPolicies", [])
                if p.get("PolicyType") == "StepScaling"
            ]
    return found


def describe_alarms(cw: CloudWatchClient, names: Sequence[str]) -> list[dict[str, Any]]:
    """The metric alarms of these names (those that exist)."""
    out: list[dict[str, Any]] = []
    with mapped("cloudwatch", "DescribeAlarms"):
        # DescribeAlarms takes at most 100 AlarmNames per call.
        for i in range(0, len(names), 100):
            pages = cw.get_paginator("describe_alarms").paginate(
                AlarmNames=list(names[i : i + 100]), AlarmTypes=["MetricAlarm"]
            )
            for page in pages:
                out += [dict(a) for a in page.get("MetricAlarms", [])]
    return out


def read_step_path(
    appscaling: ApplicationAutoScalingClient, cw: CloudWatchClient, resource_id: str
) -> tuple[list[StepPolicy], list[dict[str, Any]]]:
    """The service's step policies and the alarms that invoke them (those that exist)."""
    policies = step_policies(appscaling, resource_id)
    names = sorted({a for p in policies for a in p.alarms})
    return policies, describe_alarms(cw, names) if names else []


def check_fast_path(
    appscaling: ApplicationAutoScalingClient,
    cw: CloudWatchClient,
    fast: fp.FastPath,
    *,
    resource_id: str,
    cluster: str,
    service: str,
) -> str | None:
    """Read the service's step policies and their alarms; see :func:`explain_missing_fast_path`."""
    policies, alarms = read_step_path(appscaling, cw, resource_id)
    return explain_missing_fast_path(
        policies, alarms, fast, resource_id=resource_id, cluster=cluster, service=service
    )


def check_zero_paths(
    appscaling: ApplicationAutoScalingClient,
    cw: CloudWatchClient,
    names: Names,
    sleep_minutes: int | None = None,
) -> str | None:
    """Read the service's step policies and their alarms once; what of the wake path and
    the sleep path it lacks (:func:`explain_missing_zero_paths`, over ``sleep_minutes``
    periods: the spec's window); None when both are deployed."""
    resource_id = names.scalable_target_resource_id
    policies, alarms = read_step_path(appscaling, cw, resource_id)
    return explain_missing_zero_paths(
        policies,
        alarms,
        resource_id=resource_id,
        cluster=names.cluster,
        service=names.service,
        sleep_minutes=sleep_minutes,
    )
