"""``verify scaling`` on the fast scale-in: the reads its check and its verdict need.

Before the test :func:`check_fast_scale_in` reads the service's step policies and
alarms for :func:`ecs_gpu.checks.verify.scale_in.explain_missing_fast_scale_in`;
after the fall :func:`first_scale_in` reads the scaling activities since the low
phase began for :func:`ecs_gpu.checks.verify.scale_in.first_lowering`, which
:func:`ecs_gpu.checks.verify.scale_in.judge_scale_in` judges.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING

from ecs_gpu.aws import verify_decision as vdec
from ecs_gpu.aws import verify_step_paths as vsp
from ecs_gpu.checks.verify.scale_in import ScaleIn, explain_missing_fast_scale_in, first_lowering
from ecs_gpu.contracts.naming import Names
from ecs_gpu.design.paths import fast_scale_in as fsi

if TYPE_CHECKING:
    from mypy_boto3_application_autoscaling import ApplicationAutoScalingClient
    from mypy_boto3_cloudwatch import CloudWatchClient


def check_fast_scale_in(
    appscaling: ApplicationAutoScalingClient,
    cw: CloudWatchClient,
    fast_in: fsi.FastScaleIn,
    names: Names,
) -> str | None:
    """Read the service's step policies and alarms; see :func:`explain_missing_fast_scale_in`."""
    resource_id = names.scalable_target_resource_id
    policies, alarms = vsp.read_step_path(appscaling, cw, resource_id)
    return explain_missing_fast_scale_in(
        policies,
        alarms,
        fast_in,
        resource_id=resource_id,
        cluster=names.cluster,
        service=names.service,
    )


def first_scale_in(
    appscaling: ApplicationAutoScalingClient, resource_id: str, *, since: datetime, before: int
) -> ScaleIn | None:
    """The first activity at or after ``since`` that lowered desiredCount from ``before``
    (desiredCount at ``since``), as :func:`first_lowering` reads the activities."""
    policies = vsp.step_policies(appscaling, resource_id)
    activities = vdec.activities_since(appscaling, resource_id, since=since)
    return first_lowering(activities, policies, before=before)
