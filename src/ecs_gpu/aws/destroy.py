"""Destroy a stack without the known hang: hold scaling at 0, stop the tasks,
unprotect the fleet, then DeleteStack.

An ASG under managed termination protection hangs CloudFormation's delete
(aws-cdk #18179), and a service whose autoscaling is live puts tasks back
while the delete runs. :func:`find` reads what would be deleted,
:func:`start_delete` prepares and starts the delete, telling an ``on_step``
callback each step it took (the CLI renders them), and a failure on the way
says what is left half done. Following the delete is
:func:`ecs_gpu.aws.follow.follow`'s.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final, Literal

from botocore import exceptions as bx

from ecs_gpu.aws import deploy as dp
from ecs_gpu.aws import follow as fl
from ecs_gpu.aws.errors import error_code, mapped
from ecs_gpu.checks.stack_events import is_in_progress
from ecs_gpu.contracts.naming import Names, scalable_target_id
from ecs_gpu.errors import EXIT_INTERRUPTED, EcsGpuError, ProblemsFound

if TYPE_CHECKING:
    from mypy_boto3_application_autoscaling import ApplicationAutoScalingClient
    from mypy_boto3_autoscaling import AutoScalingClient
    from mypy_boto3_cloudformation import CloudFormationClient
    from mypy_boto3_ecs import ECSClient

# SetInstanceProtection takes at most 50 instance ids per call.
PROTECTION_BATCH = 50
DESCRIBE_TASKS_BATCH = 100


@dataclass(frozen=True)
class StackResource:
    logical_id: str
    resource_type: str
    physical_id: str
    status: str


def stack_resources(cfn: CloudFormationClient, stack: str) -> list[StackResource]:
    out: list[StackResource] = []
    with mapped("cloudformation", "ListStackResources"):
        for page in cfn.get_paginator("list_stack_resources").paginate(StackName=stack):
            for r in page.get("StackResourceSummaries", []):
                if not r.get("LogicalResourceId"):
                    continue  # moto lists resource types it skipped with no id
                out.append(
                    StackResource(
                        logical_id=r["LogicalResourceId"],
                        resource_type=r["ResourceType"],
                        physical_id=r.get("PhysicalResourceId", ""),
                        status=r.get("ResourceStatus", ""),
                    )
                )
    return out


def physical_of(resources: list[StackResource], rtype: str) -> str | None:
    for r in resources:
        if r.resource_type == rtype and r.physical_id:
            return r.physical_id
    return None


# ServiceNotActiveException: a DRAINING or INACTIVE service ("You can't update a
# service that's inactive", UpdateService), e.g. one a failed delete already removed.
_ECS_GONE = frozenset(
    {"ServiceNotFoundException", "ClusterNotFoundException", "ServiceNotActiveException"}
)
_ECS_SCALABLE_DIMENSION: Final = "ecs:service:DesiredCount"


def hold_scaling_at_zero(appscaling: ApplicationAutoScalingClient, resource_id: str) -> bool:
    """Suspend the service's autoscaling and let it reach 0, so nothing puts tasks back.

    Only touches a scalable target that exists (RegisterScalableTarget would
    otherwise create one). Returns whether there was one.
    """
    with mapped("application-autoscaling", "DescribeScalableTargets"):
        found = appscaling.describe_scalable_targets(
            ServiceNamespace="ecs",
            ResourceIds=[resource_id],
            ScalableDimension=_ECS_SCALABLE_DIMENSION,
        ).get("ScalableTargets", [])
    if not found:
        return False
    with mapped("application-autoscaling", "RegisterScalableTarget"):
        appscaling.register_scalable_target(
            ServiceNamespace="ecs",
            ResourceId=resource_id,
            ScalableDimension=_ECS_SCALABLE_DIMENSION,
            MinCapacity=0,
            SuspendedState={
                "DynamicScalingInSuspended": True,
                "DynamicScalingOutSuspended": True,
                "ScheduledScalingSuspended": True,
            },
        )
    return True


def scale_service_to_zero(ecs: ECSClient, cluster: str, service: str) -> bool:
    """Set desiredCount 0. Returns False when the service (or cluster) is gone."""
    with mapped("ecs", "UpdateService"):
        try:
            ecs.update_service(cluster=cluster, service=service, desiredCount=0)
        except bx.ClientError as e:
            if error_code(e) in _ECS_GONE or "INACTIVE" in str(e):
                return False
            raise
    return True


def _chunks(items: list[str], n: int) -> Iterator[list[str]]:
    for i in range(0, len(items), n):
        yield items[i : i + n]


def live_tasks(ecs: ECSClient, cluster: str, service: str) -> list[str]:
    """Task ARNs of the service that have not reached STOPPED yet."""
    arns: list[str] = []
    with mapped("ecs", "ListTasks"):
        try:
            for desired in ("RUNNING", "STOPPED"):
                pages = ecs.get_paginator("list_tasks").paginate(
                    cluster=cluster, serviceName=service, desiredStatus=desired
                )
                for page in pages:
                    arns.extend(page.get("taskArns", []))
        except bx.ClientError as e:
            if error_code(e) in _ECS_GONE:
                return []
            raise
    alive: list[str] = []
    for batch in _chunks(arns, DESCRIBE_TASKS_BATCH):
        with mapped("ecs", "DescribeTasks"):
            tasks = ecs.describe_tasks(cluster=cluster, tasks=batch).get("tasks", [])
        alive.extend(t["taskArn"] for t in tasks if t.get("lastStatus") != "STOPPED")
    return alive


def wait_tasks_stopped(
    ecs: ECSClient,
    cluster: str,
    service: str,
    *,
    timeout_s: float,
    waits: dp.Waits | None = None,
    on_poll: Callable[[int, float], None] = lambda n, t: None,
) -> list[str]:
    """Wait (bounded) until the service has no live task; return those still alive."""
    w = waits or dp.Waits()
    start = w.clock()
    while True:
        alive = live_tasks(ecs, cluster, service)
        elapsed = w.clock() - start
        on_poll(len(alive), elapsed)
        if not alive or elapsed >= timeout_s:
            return alive
        w.sleep(w.poll_s)


def unprotect_instances(
    autoscaling: AutoScalingClient, asg: str, done: list[str] | None = None
) -> list[str]:
    """Remove scale-in protection from every instance of ``asg``; return their ids.

    ``done`` gets each batch's ids as its call returns, so a destroy stopped
    between batches (Ctrl-C) still names every instance it unprotected.

    CloudFormation will not terminate protected instances, so an ASG under
    managed termination protection hangs the delete (aws-cdk #18179).
    New instances are unprotected too, in case the ASG launches one while
    the stack is being deleted.
    """
    with mapped("autoscaling", "DescribeAutoScalingGroups"):
        groups = autoscaling.describe_auto_scaling_groups(AutoScalingGroupNames=[asg]).get(
            "AutoScalingGroups", []
        )
    if not groups:
        return []
    group = groups[0]
    protected = [
        i["InstanceId"] for i in group.get("Instances", []) if i.get("ProtectedFromScaleIn")
    ]
    if group.get("NewInstancesProtectedFromScaleIn"):
        with mapped("autoscaling", "UpdateAutoScalingGroup"):
            autoscaling.update_auto_scaling_group(
                AutoScalingGroupName=asg, NewInstancesProtectedFromScaleIn=False
            )
    for batch in _chunks(protected, PROTECTION_BATCH):
        with mapped("autoscaling", "SetInstanceProtection"):
            autoscaling.set_instance_protection(
                InstanceIds=batch, AutoScalingGroupName=asg, ProtectedFromScaleIn=False
            )
        if done is not None:
            done.extend(batch)
    return protected


# --- the workflow -----------------------------------------------------------------


@dataclass(frozen=True)
class Deployed:
    """The physical names of a deployed stack's cluster, service and ASG (and Spot ASG).

    None where the stack has no such resource (a create that failed early):
    destroy then skips that step rather than act on a same-named resource of
    another stack.
    """

    cluster: str | None
    service: str | None
    asg: str | None
    # [capacity.spot]'s group, when the stack has one.
    spot_asg: str | None = None

    @property
    def groups(self) -> list[str]:
        """Every GPU group destroy unprotects: the On-Demand one, then the Spot one."""
        return [g for g in (self.asg, self.spot_asg) if g]

    @property
    def service_name(self) -> str | None:
        # A service's physical id is its ARN (.../service/CLUSTER/NAME).
        return self.service.rsplit("/", 1)[-1] if self.service else None

    @property
    def scalable_target_resource_id(self) -> str | None:
        if self.cluster is None or self.service_name is None:
            return None
        return scalable_target_id(self.cluster, self.service_name)

    @classmethod
    def of(cls, resources: list[StackResource], names: Names) -> Deployed:
        """From the stack's own resources only (right for any --stack).

        Not the spec's names for a resource the stack lacks: a cluster, service
        or group of that name belongs to something else, which destroy does
        not list and must not change. With two groups, the Spot one is the one
        named ``names.spot_asg``.
        """
        groups = [
            r.physical_id
            for r in resources
            if r.resource_type == "AWS::AutoScaling::AutoScalingGroup" and r.physical_id
        ]
        spot = names.spot_asg if names.spot_asg in groups else None
        return cls(
            cluster=physical_of(resources, "AWS::ECS::Cluster"),
            service=physical_of(resources, "AWS::ECS::Service"),
            asg=next((g for g in groups if g != spot), None),
            spot_asg=spot,
        )


@dataclass(frozen=True)
class Target:
    """A stack to destroy: its state, everything in it, and its cluster, service and ASG."""

    stack: str
    state: dp.StackState
    resources: list[StackResource]
    deployed: Deployed

    @property
    def deleting(self) -> bool:
        """A delete already runs: follow it, nothing to prepare or ask."""
        return self.state.status == "DELETE_IN_PROGRESS"


def find(
    cfn: CloudFormationClient, names: Names, *, stack: str, service_name: str
) -> Target | None:
    """The stack to destroy, or None when it does not exist.

    A stack that ecs-gpu did not deploy, or deployed from a spec other than
    the one named ``service_name``, is refused (exit 2) before anything is
    shown or changed.
    """
    state = dp.stack_state(cfn, stack)
    if state is None:
        return None
    dp.check_owned(state, service_name, action="delete")
    resources = [r for r in stack_resources(cfn, stack) if r.logical_id]
    return Target(stack, state, resources, Deployed.of(resources, names))


def check_deletable(target: Target) -> None:
    """Refuse (exit 1) a stack with termination protection before anything changes.

    DeleteStack on it "fails and the stack, including its status, remains
    unchanged", but destroy's steps before it would already have taken the
    service to 0 tasks and unprotected its instances.
    """
    if target.state.termination_protection:
        raise ProblemsFound(
            f"stack {target.stack} has termination protection, so CloudFormation will not "
            "delete it; nothing was changed. Fix: if you do mean to delete it, `aws "
            "cloudformation update-termination-protection --no-enable-termination-protection "
            f"--stack-name {target.stack}`, then run destroy again."
        )


def check_not_busy(target: Target, region: str | None) -> None:
    """Refuse (exit 1) a stack another operation than a delete owns."""
    if is_in_progress(target.state.status):
        raise ProblemsFound(
            f"stack {target.stack} is {target.state.status}: wait for that operation to end; "
            + dp.follow_hint(target.stack, region)
            + "."
        )


StepKind = Literal["held_scaling", "scaled_to_zero", "tasks_still_stopping", "unprotected"]


@dataclass(frozen=True)
class Step:
    """One step destroy took before DeleteStack, for the caller to show.

    ``count``: the tasks still stopping, or the instances unprotected;
    ``timeout_s``: how long the tasks were waited for.
    """

    kind: StepKind
    deployed: Deployed
    count: int = 0
    timeout_s: float = 0.0
    # The group an "unprotected" step was about (empty: deployed.asg).
    group: str = ""


def _half_done(names: Deployed, unprotected: dict[str, list[str]]) -> str:
    """What a destroy that stopped before DeleteStack leaves behind, and the two ways on.

    ``unprotected``: the instances destroy took scale-in protection from, by
    group. Keeping the service means protecting them again: managed termination
    protection needs the group and each instance protected, and a redeploy of
    an unchanged template puts nothing back.
    """
    rid = names.scalable_target_resource_id
    keep: list[str] = []
    if rid is not None:
        keep.append(
            "`aws application-autoscaling register-scalable-target --service-namespace ecs "
            f"--resource-id {rid} --scalable-dimension ecs:service:DesiredCount --min-capacity "
            "MIN_TASKS --suspended-state DynamicScalingInSuspended=false,"
            "DynamicScalingOutSuspended=false,ScheduledScalingSuspended=false`"
        )
        keep.append(
            f"`aws ecs update-service --cluster {names.cluster} --service {names.service_name} "
            "--desired-count MIN_TASKS`"
        )
    for group in names.groups:
        keep.append(
            "`aws autoscaling update-auto-scaling-group --auto-scaling-group-name "
            f"{group} --new-instances-protected-from-scale-in`"
        )
        if unprotected.get(group):
            keep.append(
                f"`aws autoscaling set-instance-protection --auto-scaling-group-name {group} "
                f"--instance-ids {' '.join(unprotected[group])} --protected-from-scale-in`"
            )
    text = (
        " The stack is still there, but destroy may already have set the service's desired "
        "count to 0, suspended its autoscaling (minimum 0) and unprotected its instances. "
        "Finish with `ecs-gpu destroy SPEC`"
    )
    if not keep:
        return text + "."
    return (
        text + ", or keep the service: " + " and ".join(keep) + " (MIN_TASKS: [scaling] min_tasks)."
    )


def _prepare_delete(
    ecs: ECSClient,
    autoscaling: AutoScalingClient,
    appscaling: ApplicationAutoScalingClient,
    cfn: CloudFormationClient,
    deployed: Deployed,
    state: dp.StackState,
    *,
    task_timeout_s: float,
    waits: dp.Waits,
    on_step: Callable[[Step], None],
    unprotected: dict[str, list[str]],
) -> set[str]:
    """Steps 1-4 of destroy: hold scaling at 0, stop the tasks, unprotect, DeleteStack.

    A step whose resource the stack lacks is skipped. ``unprotected`` is filled
    with the instances unprotected, by group, as each call returns.
    """
    cluster, service = deployed.cluster, deployed.service
    rid = deployed.scalable_target_resource_id
    if rid is not None and hold_scaling_at_zero(appscaling, rid):
        on_step(Step("held_scaling", deployed))
    if cluster is not None and service is not None and scale_service_to_zero(ecs, cluster, service):
        on_step(Step("scaled_to_zero", deployed))
        alive = wait_tasks_stopped(ecs, cluster, service, timeout_s=task_timeout_s, waits=waits)
        if alive:
            on_step(Step("tasks_still_stopping", deployed, len(alive), task_timeout_s))
    for asg in deployed.groups:
        unprotected[asg] = []
        unprotect_instances(autoscaling, asg, unprotected[asg])
        if unprotected[asg]:
            on_step(Step("unprotected", deployed, len(unprotected[asg]), group=asg))
    return fl.delete_stack(cfn, state.stack_id)


def start_delete(
    ecs: ECSClient,
    autoscaling: AutoScalingClient,
    appscaling: ApplicationAutoScalingClient,
    cfn: CloudFormationClient,
    target: Target,
    *,
    task_timeout_s: float,
    waits: dp.Waits,
    on_step: Callable[[Step], None] = lambda step: None,
) -> set[str]:
    """Prepare and start the delete; return the event ids that predate it.

    Stopped on the way (Ctrl-C, a denial), the error keeps its exit code and
    says what is left half done and the two ways on.
    """
    unprotected: dict[str, list[str]] = {}
    try:
        return _prepare_delete(
            ecs,
            autoscaling,
            appscaling,
            cfn,
            target.deployed,
            target.state,
            task_timeout_s=task_timeout_s,
            waits=waits,
            on_step=on_step,
            unprotected=unprotected,
        )
    except KeyboardInterrupt:
        raise EcsGpuError(
            "interrupted before the stack delete started."
            + _half_done(target.deployed, unprotected),
            exit_code=EXIT_INTERRUPTED,
        ) from None
    except EcsGpuError as e:
        # Same error and exit code (a denial stays exit 3), plus what is left.
        e.message += _half_done(target.deployed, unprotected)
        e.args = (e.message,)
        raise
