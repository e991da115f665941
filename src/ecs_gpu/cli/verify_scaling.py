"""``ecs-gpu verify scaling``: prove the scaling loop moves, out and back in.

Thin: the test and its verdicts are :mod:`ecs_gpu.aws.verify_scaling`,
:mod:`ecs_gpu.aws.verify_step_paths` and :mod:`ecs_gpu.aws.verify_decision`
(through :mod:`ecs_gpu.cli.verify_verdict`); this module parses, shows
progress and renders. :func:`run_verify_scaling` takes clients, so tests
drive it against moto (or a Stubber) without going through argv.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Annotated

import typer

from ecs_gpu.aws import verify_scaling as vs
from ecs_gpu.aws import verify_step_paths as vsp
from ecs_gpu.checks.verify import scaling as vscaling
from ecs_gpu.cli.options import (
    PollOpt,
    ProfileOpt,
    RegionOpt,
    SpecArg,
    StackOpt,
    _aws,
    names_of,
    optional_seconds,
    seconds,
)
from ecs_gpu.cli.render import console, scaling_progress, warn_wake_missing
from ecs_gpu.cli.verify_verdict import (
    check_fast_path_first,
    check_fast_scale_in_first,
    report_first_decision,
    report_first_scale_in,
)
from ecs_gpu.contracts import demand_metric
from ecs_gpu.contracts.naming import Names
from ecs_gpu.design import Design
from ecs_gpu.design.paths import fast_path as fp
from ecs_gpu.design.paths import fast_scale_in as fsi
from ecs_gpu.errors import ProblemsFound
from ecs_gpu.spec import load_spec

if TYPE_CHECKING:
    from mypy_boto3_application_autoscaling import ApplicationAutoScalingClient
    from mypy_boto3_cloudwatch import CloudWatchClient
    from mypy_boto3_ecs import ECSClient


def run_verify_scaling(
    cw: CloudWatchClient,
    ecs: ECSClient,
    appscaling: ApplicationAutoScalingClient,
    names: Names,
    *,
    yes: bool,
    publish_interval_s: float,
    poll_s: float,
    scale_out_timeout_s: float,
    scale_in_timeout_s: float,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
    publisher: vs.Publisher | None = None,
    fast: fp.FastPath | None = None,
    concurrency_target: float | None = None,
    wall_clock: Callable[[], datetime] = lambda: datetime.now(UTC),
    pace: vs.Pace | None = None,
    wake_path: bool = False,
    sleep_minutes: int | None = None,
    fast_in: fsi.FastScaleIn | None = None,
) -> vscaling.ScalingResult:
    """With ``fast`` or ``concurrency_target`` (a spec on the concurrency signal), drive
    the sidecars' series.

    With ``fast`` high is inside the fast path's first step (above its
    threshold); it first checks that the service has the fast path (missing:
    a warning, and exit 1 after the test), and after the scale-out the first
    scaling activity says whether the fast path decided it. With
    ``concurrency_target`` alone (the fast path off) high is twice the
    target. Low is 0. ``wake_path``: check the wake and sleep alarms too (exit 1 after),
    the sleep alarm's window ``sleep_minutes`` (the design's, ``Zero.quiet_minutes``).
    ``fast_in`` (the spec's fast scale-in): check its step policy and alarm
    first (missing: exit 1 after), and after the fall judge the first scale-in
    (exit 1 unless its policy removed the first task, within its step).
    """
    target = fast.target if fast is not None else concurrency_target
    concurrency = target is not None
    vscaling.check_consent(yes, names, concurrency=concurrency)
    initial = vs.check_scalable(ecs, appscaling, names)
    missing = check_fast_path_first(cw, appscaling, names, fast, target)
    lacks_wake = vsp.check_zero_paths(appscaling, cw, names, sleep_minutes) if wake_path else None
    if lacks_wake is not None:
        warn_wake_missing(lacks_wake)
    lacks_in = check_fast_scale_in_first(cw, appscaling, names, fast_in)
    since = wall_clock()
    with scaling_progress(initial) as on_progress:
        try:
            result = vs.run_scaling_test(
                cw,
                ecs,
                cluster=names.cluster,
                service=names.service,
                asg=names.asg,
                concurrency=concurrency,
                fast_path=fast is not None,
                **vscaling.levels(fast, target),
                publish_interval_s=publish_interval_s,
                poll_s=poll_s,
                scale_out_timeout_s=scale_out_timeout_s,
                scale_in_timeout_s=scale_in_timeout_s,
                on_progress=on_progress,
                sleep=sleep,
                clock=clock,
                publisher=publisher,
                pace=pace,
            )
        except KeyboardInterrupt:
            raise vscaling.interrupted(concurrency=concurrency) from None
    scale_in = _first_decisions(
        appscaling, names, result, since, fast=fast, fast_in=fast_in, target=target,
        missing=missing, lacks_in=lacks_in,
    )  # fmt: skip
    console.print(
        f"[green]Scaling loop works:[/] desiredCount {result.initial} -> {result.peak} in "
        f"{result.scale_out_s:.0f} s (scale-out), back to {result.final} in "
        f"{result.scale_in_s:.0f} s (scale-in); {result.published} datapoint(s) published, "
        "publishing stopped."
    )
    lacking = [m for m in (missing, lacks_wake, lacks_in) if m is not None]
    problems = [vscaling.missing_fast_path("; ".join(lacking))] if lacking else []
    problems += [scale_in] if scale_in is not None else []
    if problems:
        raise ProblemsFound(" Also: ".join(p.message for p in problems))
    return result


def _first_decisions(
    appscaling: ApplicationAutoScalingClient,
    names: Names,
    result: vscaling.ScalingResult,
    since: datetime,
    *,
    fast: fp.FastPath | None,
    fast_in: fsi.FastScaleIn | None,
    target: float | None,
    missing: str | None,
    lacks_in: str | None,
) -> ProblemsFound | None:
    """Report which policy made the first scale-out (with ``fast``) and the first
    scale-in (with ``fast_in``); the scale-in's problem, if it was not the fast one's."""
    if fast is not None:
        report_first_decision(
            appscaling,
            names.scalable_target_resource_id,
            since=since,
            fast=fast,
            missing=missing,
        )
    if fast_in is None:
        return None
    # The low datapoints began when the scale-out was seen.
    return report_first_scale_in(
        appscaling,
        names.scalable_target_resource_id,
        since=since + timedelta(seconds=result.scale_out_s),
        before=result.peak,
        fast_in=fast_in,
        low=vscaling.levels(fast, target).get("low", 0.0),
        missing=lacks_in,
    )


def verify_scaling_cmd(
    spec: SpecArg,
    yes: Annotated[
        bool,
        typer.Option("--yes", "-y", help="Required: this changes the live service's task count."),
    ] = False,
    scale_out_timeout: Annotated[
        float,
        typer.Option(
            "--scale-out-timeout", callback=seconds(0), help="Seconds to wait for scale-out."
        ),
    ] = 1200.0,
    scale_in_timeout: Annotated[
        float,
        typer.Option(
            "--scale-in-timeout", callback=seconds(0), help="Seconds to wait for scale-in."
        ),
    ] = 1800.0,
    publish_interval: Annotated[
        float | None,
        typer.Option(
            "--publish-interval",
            callback=optional_seconds(1, example=10),
            help="Seconds between datapoints, at least 1 (default: 30 for a GPU signal, "
            f"{demand_metric.PUBLISH_INTERVAL_S} for concurrency, as the sidecars publish).",
            show_default=False,
        ),
    ] = None,
    poll_interval: PollOpt = 15.0,
    stack: StackOpt = None,
    region: RegionOpt = None,
    profile: ProfileOpt = None,
) -> None:
    """Prove the scaling loop moves: force the scaling signal high, then low, and time it.

    Publishes high nvidia_smi_utilization_gpu for the stack's ASG (with a
    SPEC on the concurrency signal: high-resolution ConcurrentRequestsPerTask
    above the fast path's threshold, or twice the target with the fast path
    off) until the service's desiredCount rises by one, then low until it
    returns. With the fast path it first checks the service has it (exit 1
    after the test when not), and reports the first scaling decision: the
    fast path's step policy, or not. With \\[scaling] fast_scale_in = true it
    checks the fast scale-in's step policy and alarm too, and exits 1 unless
    that policy removed the first task, within its step. Refuses without --yes. Always stops
    publishing on exit, Ctrl-C included, and reports the measured scale-out
    and scale-in times.

    Example:

        ecs-gpu verify scaling examples/g5-vllm.toml --yes
    """
    design = Design.of(load_spec(spec))
    s = design.spec
    target, fast = vscaling.signal_inputs(design)
    if publish_interval is None:
        publish_interval = vscaling.default_publish_interval_s(target)
    aws = _aws(profile, region)
    run_verify_scaling(
        aws("cloudwatch"),
        aws("ecs"),
        aws("application-autoscaling"),
        names_of(s, stack),
        yes=yes,
        fast=fast,
        concurrency_target=target,
        publish_interval_s=publish_interval,
        poll_s=poll_interval,
        scale_out_timeout_s=scale_out_timeout,
        scale_in_timeout_s=scale_in_timeout,
        wake_path=design.wake is not None,
        sleep_minutes=None if design.zero is None else design.zero.quiet_minutes,
        fast_in=design.fast_scale_in,
    )
