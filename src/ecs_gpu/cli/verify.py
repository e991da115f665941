"""``ecs-gpu verify metrics`` and ``ecs-gpu verify scaling``: prove a deployed service works.

Thin: the reads and the test are :mod:`ecs_gpu.aws.verify`,
:mod:`ecs_gpu.aws.verify_scaling` and :mod:`ecs_gpu.aws.verify_step_paths`, their
verdicts :mod:`ecs_gpu.checks.verify`'s; this module parses, shows progress and
renders. The ``run_*`` functions take clients, so tests drive them
against moto (or a Stubber) without going through argv.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from ecs_gpu.aws import verify as vf
from ecs_gpu.aws import verify_scaling as vs
from ecs_gpu.aws import verify_step_paths as vsp
from ecs_gpu.checks.verify import metrics as vmetrics
from ecs_gpu.checks.verify import scaling as vscaling
from ecs_gpu.checks.verify.signal_words import VERIFIED, ServerMetrics
from ecs_gpu.cli import app
from ecs_gpu.cli.options import (
    PollOpt,
    ProfileOpt,
    RegionOpt,
    SpecArg,
    StackOpt,
    _aws,
    check_spec_or_asg,
    names_of,
    optional_seconds,
    seconds,
)
from ecs_gpu.cli.render import (
    attempts_progress,
    console,
    render_divisor,
    render_metrics_ok,
    render_note,
    render_series,
    scaling_progress,
    warn_wake_missing,
)
from ecs_gpu.cli.verify_verdict import (
    check_fast_path_first,
    check_fast_scale_in_first,
    report_first_decision,
    report_first_scale_in,
)
from ecs_gpu.contracts import demand_metric
from ecs_gpu.contracts.naming import Names
from ecs_gpu.contracts.signals import (
    DEFAULT_GPU_SIGNAL,
    SeriesAt,
    SeriesNames,
    Signal,
    SignalPlan,
)
from ecs_gpu.design.paths import fast_path as fp
from ecs_gpu.design.paths import fast_scale_in as fsi
from ecs_gpu.design.paths import wake
from ecs_gpu.errors import EcsGpuError, ProblemsFound
from ecs_gpu.spec import load_spec

if TYPE_CHECKING:
    from mypy_boto3_application_autoscaling import ApplicationAutoScalingClient
    from mypy_boto3_cloudwatch import CloudWatchClient
    from mypy_boto3_ecs import ECSClient

verify_app = typer.Typer(
    name="verify",
    help=(
        "Prove a deployed service works: the GPU metric (and, for a spec that scales on "
        "concurrency, the sidecars' concurrency metric) lands (verify metrics), the "
        "scaling loop moves (verify scaling), and a service at zero tasks wakes on a "
        "request (verify wake).\n\n"
        "Examples:\n\n"
        "    ecs-gpu verify metrics examples/g5-vllm.toml --timeout 900\n\n"
        "    ecs-gpu verify scaling examples/g5-vllm.toml --yes"
    ),
    no_args_is_help=True,
    rich_markup_mode="rich",
)
app.add_typer(verify_app, name="verify")


def run_verify_metrics(
    cw: CloudWatchClient,
    names: SeriesNames,
    *,
    signals: Sequence[Signal] = (DEFAULT_GPU_SIGNAL,),
    timeout_s: float,
    interval_s: float,
    window_s: float,
    sleep: Callable[[float], None] = time.sleep,
    server: ServerMetrics | None = None,
) -> vmetrics.MetricsReport:
    what = " and ".join(VERIFIED[s].waiting(names) for s in signals)
    with attempts_progress(what, timeout_s) as on_attempt:
        report = vf.verify_metrics(
            cw,
            names,
            signals=signals,
            timeout_s=timeout_s,
            interval_s=interval_s,
            window_s=window_s,
            on_attempt=on_attempt,
            sleep=sleep,
            server=server,
        )
    render_series(report)
    if report.ok:
        render_metrics_ok(report)
    return report


@verify_app.command("metrics")
def verify_metrics_cmd(
    spec: Annotated[
        Path | None, typer.Argument(help="The spec TOML file (or give --asg).", show_default=False)
    ] = None,
    asg: Annotated[
        str | None, typer.Option("--asg", help="The Auto Scaling group name, instead of a spec.")
    ] = None,
    timeout: Annotated[
        float,
        typer.Option(
            "--timeout",
            callback=seconds(0, inclusive=True),
            help="Seconds to wait for every series (0: check once).",
        ),
    ] = 600.0,
    interval: Annotated[
        float,
        typer.Option("--interval", callback=seconds(0), help="Seconds between checks (> 0)."),
    ] = 30.0,
    window: Annotated[
        float,
        typer.Option(
            "--window",
            callback=seconds(60, inclusive=True),
            help="How recent a datapoint must be, seconds (at least 60).",
        ),
    ] = float(vf.DEFAULT_WINDOW_S),
    stack: StackOpt = None,
    region: RegionOpt = None,
    profile: ProfileOpt = None,
) -> None:
    """Wait until every GPU series of the metric contract has recent datapoints.

    Checks nvidia_smi_utilization_gpu, nvidia_smi_memory_used and
    nvidia_smi_memory_total in CWAgent by AutoScalingGroupName. With a SPEC
    that scales on concurrency, also the sidecars' EcsGpu/Serving
    ConcurrentRequestsPerTask by ClusterName and ServiceName. Exit 0 when
    all are present; 1 naming each missing series with its likely cause
    (agent or sidecar not publishing, PutMetricData denied, wrong
    dimension). With a task-gpus SPEC it also reports AWS/ECS GPUReservation
    of the cluster, the policy's divisor (a warning when it has no data; not
    the exit code). With \\[capacity.spot], the series of each group that must
    publish (docs/operate.md "With Spot capacity"), every failing group named.

    Example:

        ecs-gpu verify metrics examples/g5-vllm.toml --timeout 900
    """
    check_spec_or_asg(spec, asg, stack)
    loaded = None if spec is None else load_spec(spec)
    names = None if loaded is None else names_of(loaded, stack)
    aws = _aws(profile, region)
    # --timeout 0 checks once: an endpoint that never answers must not hold it for
    # minutes, in the plan's reads (the service, the groups) or CloudWatch's.
    once = timeout == 0
    cw = aws("cloudwatch", fail_fast=once)
    divisor = loaded is not None and vmetrics.needs_divisor(loaded)
    if loaded is None or names is None:
        # --asg alone: no spec, so no service and no signal but the agent's series.
        assert asg is not None  # exactly one of the two was given
        series_names: SeriesNames = SeriesAt(asg=asg, cluster="", service="")
        signals: tuple[Signal, ...] = (DEFAULT_GPU_SIGNAL,)
        server = None
    else:
        series_names = names
        signals = SignalPlan.of(loaded.scaling).arriving
        server = vmetrics.server_metrics(loaded)
    # With Spot, the agent's series of each group that must publish (spot.publishers).
    plan = vmetrics.metrics_plan(series_names, signals)
    if loaded is not None and names is not None and loaded.capacity.spot is not None:
        sp = loaded.capacity.spot
        plan = vf.spot_metrics_plan(
            aws("autoscaling", fail_fast=once),
            aws("ecs", fail_fast=once),
            names,
            signals,
            sp.on_demand_base,
            sp.spot_percent,
        )
    elif loaded is not None and names is not None:
        # Whether the service is at zero tasks (and the group at zero hosts).
        plan = vf.single_group_metrics_plan(
            aws("autoscaling", fail_fast=once), aws("ecs", fail_fast=once), names, signals
        )
    if plan.idle is not None:
        render_note(plan.idle)
    if plan.note is not None:
        render_note(plan.note)
    reports = [
        run_verify_metrics(
            cw,
            at,
            signals=sig,
            timeout_s=timeout,
            interval_s=interval,
            window_s=window,
            server=server,
        )
        for at, sig in plan.waits
    ]
    # Every group's series were read (only an AWS error ends the wait otherwise).
    if names is not None and divisor:
        report_divisor(cw, names.cluster, window_s=window)
    if (problem := vmetrics.metrics_problem(plan, reports, timeout_s=timeout)) is not None:
        raise problem


def report_divisor(cw: CloudWatchClient, cluster: str, *, window_s: float) -> None:
    """Say whether the task-gpus divisor has data; informational, never the exit code.

    The contract's three series are what the agent owes; GPUReservation is
    ECS's, and ECS writes it only while a task runs, so its absence is a
    state of the service to report, not a broken agent.
    """
    try:
        r = vf.fetch_reservation(cw, cluster, window_s=window_s)
    except EcsGpuError as e:
        render_divisor(cluster, None, e.message)
        return
    render_divisor(cluster, r)


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
    the sleep alarm's window ``sleep_minutes`` (the spec's, ``wake.quiet_minutes``).
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
    if fast is not None:
        report_first_decision(
            appscaling,
            names.scalable_target_resource_id,
            since=since,
            fast=fast,
            missing=missing,
        )
    scale_in = None
    if fast_in is not None:
        # The low datapoints began when the scale-out was seen.
        scale_in = report_first_scale_in(
            appscaling,
            names.scalable_target_resource_id,
            since=since + timedelta(seconds=result.scale_out_s),
            before=result.peak,
            fast_in=fast_in,
            low=vscaling.levels(fast, target).get("low", 0.0),
            missing=lacks_in,
        )
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


@verify_app.command("scaling")
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
    s = load_spec(spec)
    target, fast = vscaling.signal_inputs(s)
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
        wake_path=wake.wake_path(s) is not None,
        sleep_minutes=wake.quiet_minutes(s),
        fast_in=fsi.fast_scale_in(s),
    )
