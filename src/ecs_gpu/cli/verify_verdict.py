"""What ``verify scaling`` says of the fast path: before the test, what the service
lacks of it; after the scale-out, which policy decided first (rendered, never the
exit code: :mod:`ecs_gpu.cli.verify` raises that)."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING

from ecs_gpu import fast_path as fp
from ecs_gpu.aws import verify_scaling as vs
from ecs_gpu.cli.render import (
    note_fast_path_off,
    render_no_decision,
    render_verdict,
    warn_fast_path_missing,
)
from ecs_gpu.errors import EcsGpuError
from ecs_gpu.naming import Names

if TYPE_CHECKING:
    from mypy_boto3_application_autoscaling import ApplicationAutoScalingClient
    from mypy_boto3_cloudwatch import CloudWatchClient


def check_fast_path_first(
    cw: CloudWatchClient,
    appscaling: ApplicationAutoScalingClient,
    names: Names,
    fast: fp.FastPath | None,
    target: float | None,
) -> str | None:
    """Before the test: what of the fast path the service lacks (a warning), or the
    note that the spec has none; the first for :func:`report_first_decision`."""
    if fast is not None:
        missing = vs.check_fast_path(
            appscaling,
            cw,
            fast,
            resource_id=names.scalable_target_resource_id,
            cluster=names.cluster,
            service=names.service,
        )
        if missing is not None:
            warn_fast_path_missing(missing)
        return missing
    if target is not None:
        note_fast_path_off(vs.levels(None, target)["high"])
    return None


def report_first_decision(
    appscaling: ApplicationAutoScalingClient,
    resource_id: str,
    *,
    since: datetime,
    fast: fp.FastPath,
    missing: str | None = None,
) -> vs.Decision | None:
    """Say which policy made the first scale-out decision, and how fast; never the exit code.

    The scale-out happened (desiredCount rose); whether the fast path or
    target tracking moved it first is what a concurrency deployment wants to
    know (docs/operate.md). ``missing``: what of the fast path the service
    lacks (:func:`ecs_gpu.aws.verify_scaling.check_fast_path`), the reason it did not.
    """
    try:
        d = vs.first_decision(appscaling, resource_id, since=since)
    except EcsGpuError as e:
        render_no_decision(resource_id, e.message)
        return None
    if d is None:
        render_no_decision(resource_id)
        return d
    v = vs.judge(d, since=since, missing=missing)
    render_verdict(v, resource_id, fast)
    return d
