"""``ecs-gpu verify wake``: prove live that a request at zero tasks starts a task.

Thin: the reads and the request are :mod:`ecs_gpu.aws.verify_wake`, the verdicts
:mod:`ecs_gpu.checks.verify.wake`'s; this module parses, shows progress and renders.
:func:`run_verify_wake` takes clients, the request's opener and the clocks, so tests
drive it against moto and a local server without real time.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.markup import escape

from ecs_gpu.aws import verify_wake as vw
from ecs_gpu.checks.verify import wake as vwake
from ecs_gpu.cli.options import (
    PollOpt,
    ProfileOpt,
    RegionOpt,
    SpecArg,
    StackOpt,
    _aws,
    names_of,
    optional_seconds,
)
from ecs_gpu.cli.render import console
from ecs_gpu.cli.verify_verdict import first_activity_or_note
from ecs_gpu.contracts.naming import Names, stack_name_of
from ecs_gpu.design import Design
from ecs_gpu.design.paths import wake
from ecs_gpu.spec import load_spec

if TYPE_CHECKING:
    from mypy_boto3_application_autoscaling import ApplicationAutoScalingClient
    from mypy_boto3_cloudformation import CloudFormationClient
    from mypy_boto3_cloudwatch import CloudWatchClient
    from mypy_boto3_ecs import ECSClient


def run_verify_wake(
    design: Design,
    spec_path: Path,
    *,
    cw: CloudWatchClient,
    ecs: ECSClient,
    appscaling: ApplicationAutoScalingClient,
    cfn: CloudFormationClient | None,
    stack: str | None = None,
    url: str | None = None,
    yes: bool,
    timeout_s: float | None = None,
    running_timeout_s: float | None = None,
    poll_s: float = 10.0,
    opener: vw.Opener = vw.http_status,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
    wall_clock: Callable[[], datetime] = lambda: datetime.now(UTC),
) -> float:
    """The proof, in order: the spec has a wake path (exit 2), --yes (exit 2), the wake
    path is deployed (exit 1), the service is at zero (exit 1), one request reaches the
    load balancer (exit 3), the wake policy raises desiredCount within the timeout (exit
    1). Then, a note and never the exit code, the wait for a RUNNING task. Returns the
    seconds from the request to desiredCount >= 1. ``cfn`` is read only without ``url``."""
    wp = vwake.require_wake_path(design, spec_path)
    spec = design.spec
    names = names_of(spec, stack)
    vwake.check_consent(yes, names)
    config = vw.check_deployed(appscaling, cw, names)
    vwake.check_at_zero(vw.service_counts(ecs, names), design, names)
    if url is None:
        assert cfn is not None  # the command makes one without --url
        url = vw.stack_url(cfn, spec, stack_name_of(spec, stack))
    bound = wake.detection_s(wp)
    wait = vwake.default_timeout_s(wp) if timeout_s is None else timeout_s
    since, start = wall_clock(), clock()
    internal = spec.load_balancer is not None and spec.load_balancer.scheme == "internal"
    status = vw.send_request(url, internal=internal, opener=opener)
    note = (
        ""
        if status == vwake.AT_ZERO_STATUS
        else f" [yellow](expected {vwake.AT_ZERO_STATUS}: the ALB with no registered target; "
        "check that --url is this stack's load balancer)[/]"
    )
    console.print(
        f"Sent one request to {escape(url)}: answered {status}.{note} Waiting up to "
        f"{wait:.0f} s for desiredCount >= 1 (expected within {bound} s: one {wp.period_s}-s "
        "ALB period, its datapoint's lag and the alarm's evaluation, aws-semantics §10).",
        soft_wrap=True,
    )
    counts, rise_s, rose = vwake.wait_for(
        lambda: vw.service_counts(ecs, names),
        lambda c: c.desired >= 1,
        start=start,
        timeout_s=wait,
        poll_s=poll_s,
        sleep=sleep,
        clock=clock,
    )
    if not rose:
        raise vwake.never_rose(url=url, status=status, timeout_s=wait, wp=wp, config=config)
    resource_id = names.scalable_target_resource_id
    d = first_activity_or_note(
        lambda: vw.first_activity(
            appscaling, resource_id, since=since, wake_policies=config.policies
        ),
        resource_id,
    )
    if d is None:
        raise vwake.no_activity(rise_s=rise_s, resource_id=resource_id)
    if d.policy is None:
        raise vwake.not_the_wake(d, rise_s=rise_s, resource_id=resource_id)
    late = (
        f" [yellow](beyond the expected {bound} s: the ALB datapoint's lag is longer than "
        "one period today)[/]"
        if rise_s > bound
        else f" (expected within {bound} s)"
    )
    console.print(
        f"[green]Wake path works:[/] the wake policy {escape(d.policy)} set desiredCount "
        f"{counts.desired} {rise_s:.0f} s after the request{late}: "
        f"{escape(d.cause or d.description)}",
        soft_wrap=True,
    )
    report_running(ecs, names, design, start, running_timeout_s, poll_s, sleep, clock)
    return rise_s


def report_running(
    ecs: ECSClient,
    names: Names,
    design: Design,
    start: float,
    timeout_s: float | None,
    poll_s: float,
    sleep: Callable[[float], None],
    clock: Callable[[], float],
) -> None:
    """Wait for the first RUNNING task and say how long it took against the start
    (boot + pull + load, or the warm pool's); a note, never the exit code."""
    zero = design.zero
    assert zero is not None  # require_wake_path refused a design that never sleeps
    expected = zero.start_s
    wait = vwake.default_running_timeout_s(zero) if timeout_s is None else timeout_s
    if wait <= 0:
        return
    counts, running_s, ran = vwake.wait_for(
        lambda: vw.service_counts(ecs, names),
        lambda c: c.running >= 1,
        start=start,
        timeout_s=wait,
        poll_s=poll_s,
        sleep=sleep,
        clock=clock,
    )
    if ran:
        console.print(
            f"First task RUNNING {running_s:.0f} s after the request (the start: about "
            f"{expected:.0f} s of boot, image pull and model load, or the warm pool's start).",
            soft_wrap=True,
        )
        return
    console.print(
        f"[yellow]note:[/] no task RUNNING {wait:.0f} s after the request (desiredCount "
        f"{counts.desired}; the start takes about {expected:.0f} s): the instance may still "
        "be launching or pulling. `ecs-gpu doctor SPEC` reports capacity and placement "
        "problems; --running-timeout waits longer, 0 skips this wait.",
        soft_wrap=True,
    )


def verify_wake_cmd(
    spec: SpecArg,
    yes: Annotated[
        bool,
        typer.Option("--yes", "-y", help="Required: the request starts a task (and an instance)."),
    ] = False,
    url: Annotated[
        str | None,
        typer.Option(
            "--url",
            help="The URL to send the request to (default: the stack's LoadBalancerDnsName "
            "and the spec's health_check_path).",
            show_default=False,
        ),
    ] = None,
    timeout: Annotated[
        float | None,
        typer.Option(
            "--timeout",
            callback=optional_seconds(1, example=300),
            help="Seconds to wait for desiredCount >= 1 (default: the wake alarm's detection "
            "bound plus three minutes).",
            show_default=False,
        ),
    ] = None,
    running_timeout: Annotated[
        float | None,
        typer.Option(
            "--running-timeout",
            callback=optional_seconds(0, example=900),
            help="Seconds to wait afterwards for a RUNNING task, 0 to skip (default: the "
            "spec's start plus five minutes).",
            show_default=False,
        ),
    ] = None,
    poll_interval: PollOpt = 10.0,
    stack: StackOpt = None,
    region: RegionOpt = None,
    profile: ProfileOpt = None,
) -> None:
    """Prove the wake path live: one request at zero tasks starts a task.

    Checks the wake policy and its alarm are deployed (as verify scaling
    does), that the service is at zero (desiredCount and runningCount 0;
    nothing is changed to force it), then sends one GET to the load balancer
    (503 while no target is registered) and polls desiredCount. Exit 0 when
    the wake policy raised it within --timeout, naming the policy from the
    first scaling activity and the seconds against the detection bound; 1
    when it did not, with the likely causes; 3 when the request could not
    reach the load balancer (an internal one answers only inside its VPC:
    run from there, or give --url). Then reports the wait for the first
    RUNNING task. Refuses without --yes, and a spec without a wake path
    (min_tasks 0 and a load balancer).

    Example:

        ecs-gpu verify wake zero.toml --yes
    """
    design = Design.of(load_spec(spec))
    vwake.require_wake_path(design, spec)  # exit 2 before any AWS session
    if url is not None:
        vwake.check_url(url)
    aws = _aws(profile, region)
    run_verify_wake(
        design,
        spec,
        cw=aws("cloudwatch"),
        ecs=aws("ecs"),
        appscaling=aws("application-autoscaling"),
        cfn=None if url is not None else aws("cloudformation"),
        stack=stack,
        url=url,
        yes=yes,
        timeout_s=timeout,
        running_timeout_s=running_timeout,
        poll_s=poll_interval,
    )
