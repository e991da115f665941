"""What ``verify scaling`` says of the fast path and the fast scale-in: before the
test, what the service lacks of them; after the scale-out and the scale-in, which
policy decided first (rendered; :mod:`ecs_gpu.cli.verify_scaling` raises the exit code)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import TYPE_CHECKING, TypeVar

from rich.markup import escape

from ecs_gpu.aws import verify_decision as vdec
from ecs_gpu.aws import verify_scale_in as vsi
from ecs_gpu.aws import verify_step_paths as vsp
from ecs_gpu.checks.verify import decision as vdecision
from ecs_gpu.checks.verify import scale_in as vscale_in
from ecs_gpu.checks.verify import scaling as vscaling
from ecs_gpu.cli.render import (
    console,
    note_fast_path_off,
    render_no_decision,
    render_verdict,
    warn_fast_path_missing,
)
from ecs_gpu.contracts.naming import Names
from ecs_gpu.design.paths import fast_path as fp
from ecs_gpu.design.paths import fast_scale_in as fsi
from ecs_gpu.errors import EcsGpuError, ProblemsFound

if TYPE_CHECKING:
    from mypy_boto3_application_autoscaling import ApplicationAutoScalingClient
    from mypy_boto3_cloudwatch import CloudWatchClient


T = TypeVar("T")


def first_activity_or_note(read: Callable[[], T | None], resource_id: str) -> T | None:
    """What ``read`` finds of the first scaling activity; None after saying it found none
    or could not read them (a note, never the exit code: the scaling itself happened)."""
    try:
        found = read()
    except EcsGpuError as e:
        render_no_decision(resource_id, e.message)
        return None
    if found is None:
        render_no_decision(resource_id)
    return found


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
        missing = vsp.check_fast_path(
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
        note_fast_path_off(vscaling.levels(None, target)["high"])
    return None


def report_first_decision(
    appscaling: ApplicationAutoScalingClient,
    resource_id: str,
    *,
    since: datetime,
    fast: fp.FastPath,
    missing: str | None = None,
) -> vdecision.Decision | None:
    """Say which policy made the first scale-out decision, and how fast; never the exit code.

    The scale-out happened (desiredCount rose); whether the fast path or
    target tracking moved it first is what a concurrency deployment wants to
    know (docs/operate.md). ``missing``: what of the fast path the service
    lacks (:func:`ecs_gpu.aws.verify_step_paths.check_fast_path`), the reason it
    did not.
    """
    d = first_activity_or_note(
        lambda: vdec.first_decision(appscaling, resource_id, since=since), resource_id
    )
    if d is None:
        return None
    v = vdecision.judge(d, since=since, missing=missing)
    render_verdict(v, resource_id, fast)
    return d


def check_fast_scale_in_first(
    cw: CloudWatchClient,
    appscaling: ApplicationAutoScalingClient,
    names: Names,
    fast_in: fsi.FastScaleIn | None,
) -> str | None:
    """Before the test: what of the fast scale-in the service lacks (a warning, exit 1
    after the test), or None (deployed, or not in the spec)."""
    if fast_in is None:
        return None
    missing = vsi.check_fast_scale_in(appscaling, cw, fast_in, names)
    if missing is not None:
        console.print(
            f"[yellow]warning:[/] {escape(missing)}. The test goes on (without the fast "
            "scale-in target tracking scales in after 15 low minutes) and exits 1 at the end.",
            soft_wrap=True,
        )
    return missing


def report_first_scale_in(
    appscaling: ApplicationAutoScalingClient,
    resource_id: str,
    *,
    since: datetime,
    before: int,
    fast_in: fsi.FastScaleIn,
    low: float,
    missing: str | None = None,
) -> ProblemsFound | None:
    """Say which policy made the first scale-in decision; the problem to exit 1 with when
    the deployed fast scale-in did not remove the first task or removed more than its step.

    ``since``: when the low datapoints began; ``before``: desiredCount then (the peak).
    Unread or absent activities are a note: the scale-in itself happened.
    """
    d = first_activity_or_note(
        lambda: vsi.first_scale_in(appscaling, resource_id, since=since, before=before),
        resource_id,
    )
    if d is None:
        return None
    v = vscale_in.judge_scale_in(d, fast_in, since=since, low=low, missing=missing)
    said = escape(d.cause or d.description)
    when = f"{v.after_s:.0f} s after the low datapoints began, {d.status}: {said}"
    if v.by == "fast_scale_in":
        console.print(
            f"[green]First scale-in: the fast scale-in[/] (step policy {escape(d.policy or '')}, "
            f"{d.before} -> {d.after if d.after is not None else '?'}, at most {v.allowed} "
            f"allowed) {when}",
            soft_wrap=True,
        )
    elif v.by == "sleep" and v.allowed == 0:
        console.print(
            f"[green]First scale-in: the sleep path[/] (step policy {escape(d.sleeper or '')}, "
            f"{d.before} -> {d.after if d.after is not None else '?'}) after its quiet minutes, "
            f"as designed; the fast scale-in's step allows none of {d.before} (it never "
            f"removes the last task), so this is no verdict on it. {when}",
            soft_wrap=True,
        )
    elif v.by == "lacking":
        console.print(
            "[yellow]First scale-in: not the fast scale-in[/], which the service lacks (the "
            f"warning above). {when}",
            soft_wrap=True,
        )
    else:
        what = {
            "too_many": "more than its step allows",
            "sleep": "the sleep path, not the fast scale-in",
        }.get(v.by, "not the fast scale-in")
        console.print(f"[red]First scale-in: {what}[/]. {when}", soft_wrap=True)
    return vscale_in.scale_in_problem(v, fast_in, resource_id=resource_id)
