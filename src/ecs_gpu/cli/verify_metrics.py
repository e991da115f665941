"""``ecs-gpu verify metrics``: prove every series the scaling loop reads lands in CloudWatch.

Thin: the plan, the wait and the verdict are :mod:`ecs_gpu.aws.verify`;
this module parses, shows progress and renders. :func:`run_verify_metrics`
takes a client, so tests drive it against moto (or a Stubber) without
going through argv.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from ecs_gpu.aws import verify as vf
from ecs_gpu.checks.verify import metrics as vmetrics
from ecs_gpu.checks.verify.signal_words import VERIFIED, ServerMetrics
from ecs_gpu.cli.options import (
    Aws,
    ProfileOpt,
    RegionOpt,
    StackOpt,
    _aws,
    check_spec_or_asg,
    names_of,
    seconds,
)
from ecs_gpu.cli.render import (
    attempts_progress,
    render_divisor,
    render_metrics_ok,
    render_note,
    render_series,
)
from ecs_gpu.contracts.naming import Names
from ecs_gpu.contracts.signals import (
    DEFAULT_GPU_SIGNAL,
    SeriesAt,
    SeriesNames,
    Signal,
    SignalPlan,
)
from ecs_gpu.errors import EcsGpuError
from ecs_gpu.spec import Spec, load_spec

if TYPE_CHECKING:
    from mypy_boto3_cloudwatch import CloudWatchClient


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
    plan, server = _metrics_plan(aws, loaded, names, asg, once=once)
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


def _metrics_plan(
    aws: Aws, loaded: Spec | None, names: Names | None, asg: str | None, *, once: bool
) -> tuple[vmetrics.MetricsPlan, ServerMetrics | None]:
    """What to wait for, and where the server's own metrics are.

    ``--asg`` alone: no spec, so no service and no signal but the agent's
    series of that group. With a spec: every signal the scaling loop reads;
    with Spot the agent's series of each group that must publish
    (spot.publishers), without it whether the service is at zero tasks (and
    the group at zero hosts).
    """
    if loaded is None or names is None:
        assert asg is not None  # exactly one of the two was given
        series_names: SeriesNames = SeriesAt(asg=asg, cluster="", service="")
        return vmetrics.metrics_plan(series_names, (DEFAULT_GPU_SIGNAL,)), None
    signals = SignalPlan.of(loaded.scaling).arriving
    server = vmetrics.server_metrics(loaded)
    sp = loaded.capacity.spot
    if sp is not None:
        plan = vf.spot_metrics_plan(
            aws("autoscaling", fail_fast=once),
            aws("ecs", fail_fast=once),
            names,
            signals,
            sp.on_demand_base,
            sp.spot_percent,
        )
    else:
        plan = vf.single_group_metrics_plan(
            aws("autoscaling", fail_fast=once), aws("ecs", fail_fast=once), names, signals
        )
    return plan, server


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
