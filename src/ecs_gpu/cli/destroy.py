"""``ecs-gpu destroy``: delete the stack of SPEC without the known hang.

Thin: the workflow is :mod:`ecs_gpu.aws.destroy`; this module asks, renders
its steps (:func:`ecs_gpu.cli.render.render_destroy_step`) and follows the
delete.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Annotated

import typer
from rich.markup import escape

from ecs_gpu.aws import deploy as dp
from ecs_gpu.aws import destroy as ds
from ecs_gpu.aws import follow as fl
from ecs_gpu.cli.options import (
    PollOpt,
    ProfileOpt,
    RegionOpt,
    SpecArg,
    StackOpt,
    YesOpt,
    _aws,
    confirm,
    names_of,
    seconds,
    stack_of,
)
from ecs_gpu.cli.render import console, follow_to_end, render_destroy_step, render_doomed
from ecs_gpu.contracts.naming import Names
from ecs_gpu.spec import load_spec

if TYPE_CHECKING:
    from mypy_boto3_application_autoscaling import ApplicationAutoScalingClient
    from mypy_boto3_autoscaling import AutoScalingClient
    from mypy_boto3_cloudformation import CloudFormationClient
    from mypy_boto3_ecs import ECSClient


def run_destroy(
    cfn: CloudFormationClient,
    ecs: ECSClient,
    autoscaling: AutoScalingClient,
    appscaling: ApplicationAutoScalingClient,
    names: Names,
    *,
    yes: bool,
    waits: dp.Waits,
    task_timeout_s: float,
    stuck_after_s: float,
    region: str | None = None,
    ask: Callable[..., bool] = confirm,
    stack: str | None = None,
    service_name: str | None = None,
) -> fl.FollowResult | None:
    """Scale to zero, unprotect the fleet, delete the stack, follow it.

    ``stack`` (``--stack``) defaults to the spec's stack name. A stack that
    ecs-gpu did not deploy, or deployed from a spec other than the one named
    ``service_name`` (default: ``names.service_name``), is refused (exit 2)
    before anything is shown or changed.
    """
    stack = stack if stack is not None else names.stack
    owner = service_name if service_name is not None else names.service_name
    target = ds.find(cfn, names, stack=stack, service_name=owner)
    if target is None:
        console.print(f"Stack {escape(stack)} does not exist: nothing to delete.")
        return None
    render_doomed(target)
    if not target.deleting:
        ds.check_not_busy(target, region)
        ds.check_deletable(target)
        console.print(
            "This stops every task, terminates the GPU instances and deletes the service's "
            "logs and dashboard."
        )
        if not ask(f"Delete stack {stack}?", yes=yes, action="destroy"):
            console.print("Cancelled: nothing was changed.")
            return None
        seen = ds.start_delete(
            ecs,
            autoscaling,
            appscaling,
            cfn,
            target,
            task_timeout_s=task_timeout_s,
            waits=waits,
            on_step=render_destroy_step,
        )
    else:
        console.print("A delete is already in progress; following it.")
        seen = set()
    return follow_to_end(
        cfn,
        stack,
        target.state.stack_id,
        seen,
        waits,
        region=region,
        what="The delete",
        stuck_after_s=stuck_after_s,
    )


def destroy_cmd(
    spec: SpecArg,
    yes: YesOpt = False,
    stack: StackOpt = None,
    region: RegionOpt = None,
    profile: ProfileOpt = None,
    poll_interval: PollOpt = 5.0,
    task_timeout: Annotated[
        float,
        typer.Option(
            "--task-timeout",
            callback=seconds(0, inclusive=True),
            help="Seconds to wait for tasks to stop (0: do not wait).",
        ),
    ] = 600.0,
    stuck_after: Annotated[
        float,
        typer.Option(
            "--stuck-after",
            callback=seconds(0),
            help="Seconds of DELETE_IN_PROGRESS after which the hang is explained, not waited on.",
        ),
    ] = 1800.0,
) -> None:
    """Delete the stack of SPEC without the known hang.

    Shows what will be deleted and asks; scales the service to 0 (and
    suspends its autoscaling), waits for its tasks to stop, removes scale-in
    protection from the ASG's instances, then deletes the stack and follows
    it. A delete stuck longer than --stuck-after is explained, not waited on.
    Only a stack ecs-gpu deployed from this spec is deleted (its ecs-gpu:spec
    tag); any other is refused with exit 2.

    Example:

        ecs-gpu destroy examples/g5-vllm.toml
    """
    s = load_spec(spec)
    name = stack_of(s, stack)
    aws = _aws(profile, region)
    run_destroy(
        aws("cloudformation"),
        aws("ecs"),
        aws("autoscaling"),
        aws("application-autoscaling"),
        names_of(s, stack),
        yes=yes,
        waits=dp.Waits(poll_s=poll_interval),
        task_timeout_s=task_timeout,
        stuck_after_s=stuck_after,
        region=aws.region,
        stack=name,
        service_name=s.service.name,
    )
