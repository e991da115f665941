"""Link 11, stack: the CloudFormation stack."""

from __future__ import annotations

import re
from typing import Final

from ecs_gpu.checks.doctor.common import (
    collection_target,
    parse_time,
)
from ecs_gpu.checks.doctor.registry import check
from ecs_gpu.checks.model import Check, Evidence, Finding
from ecs_gpu.checks.snapshot import COLLECTION_KEY, Snapshot


@check(
    "STK001",
    link="stack",
    severity="error",
    title="Stack delete is stuck on protected instances",
    requires=("stacks", "auto_scaling_groups"),
    doc="The stack is DELETE_IN_PROGRESS/DELETE_FAILED and ASG instances are scale-in protected.",
)
def _stack_delete_stuck(s: Snapshot, c: Check) -> list[Finding]:
    name = collection_target(s).get("stack")
    if not s["stacks"] and name:
        # DescribeStacks found none: "no delete is stuck" would be about no stack at all.
        return [
            c.finding(
                [Evidence("stacks", name, "StackStatus", "does not exist")],
                f"The stack {name} does not exist, yet its cluster and service do: they were "
                "deployed as another stack (pass that name with --stack, as to `ecs-gpu "
                "deploy --stack`), or the stack was deleted and left them behind (delete them "
                "by hand, or deploy the stack again).",
                title="The stack does not exist",
                severity="warning",
            )
        ]
    out = []
    for st in s["stacks"]:
        status = st.get("StackStatus", "")
        if status not in ("DELETE_IN_PROGRESS", "DELETE_FAILED"):
            continue
        protected = [
            (g["AutoScalingGroupName"], i["InstanceId"])
            for g in s["auto_scaling_groups"]
            for i in g.get("Instances", [])
            if i.get("ProtectedFromScaleIn")
        ]
        ev = [Evidence("stacks", st.get("StackName", "?"), "StackStatus", status)]
        if st.get("StackStatusReason"):
            ev.append(
                Evidence(
                    "stacks", st.get("StackName", "?"), "StackStatusReason", st["StackStatusReason"]
                )
            )
        if protected:
            ev.append(
                Evidence(
                    "auto_scaling_groups",
                    protected[0][0],
                    "Instances[].ProtectedFromScaleIn",
                    [i for _, i in protected],
                )
            )
            fix = (
                "CloudFormation cannot delete an ASG whose instances are protected from scale-in "
                "(aws-cdk#18179). Remove the protection: aws autoscaling set-instance-protection "
                f"--auto-scaling-group-name {protected[0][0]} --instance-ids "
                f"{' '.join(i for _, i in protected)} --no-protected-from-scale-in; "
                + (
                    "then delete again (`ecs-gpu destroy`, which removes the protection "
                    "itself, or aws cloudformation delete-stack --stack-name "
                    f"{st.get('StackName', name)}): a failed delete does not resume on its own."
                    if status == "DELETE_FAILED"
                    else "the delete then proceeds (`ecs-gpu destroy` does this for you)."
                )
            )
        elif status == "DELETE_FAILED":
            fix = _delete_failed_fix(str(st.get("StackName", name)), st.get("StackStatusReason"))
        else:
            continue  # deleting normally
        # The first minutes of a delete look the same while ECS drains tasks;
        # only a delete that has run for a while is stuck.
        started = parse_time(st.get("DeletionTime"))
        now = parse_time((s.get(COLLECTION_KEY) or {}).get("collected_at"))
        young = (
            status == "DELETE_IN_PROGRESS"
            and started is not None
            and now is not None
            and (now - started).total_seconds() < STUCK_DELETE_S
        )
        out.append(
            c.finding(
                ev,
                fix,
                severity="warning" if young else None,
                title="Stack delete is waiting on protected instances"
                if young
                else None
                if protected
                else "The stack's delete failed",
            )
        )
    return out


# A delete still in progress after this long is stuck, not draining.
STUCK_DELETE_S: Final = 15 * 60


# CloudFormation's reason for a failed delete names the resources' logical ids.
_FAILED_TO_DELETE: Final = re.compile(r"failed to delete: \[([^\]]*)\]")


def _delete_failed_fix(stack: str, reason: str | None) -> str:
    """Find the resource the delete failed on, resolve or keep it, and delete again."""
    found = _FAILED_TO_DELETE.search(reason or "")
    ids = [i.strip() for i in found.group(1).split(",") if i.strip()] if found else []
    named = f" ({', '.join(ids)})" if ids else ""
    return (
        f"The delete stopped at a resource it could not delete{named}, and a failed delete "
        "does not resume on its own. Find it and why: aws cloudformation describe-stack-events "
        f"--stack-name {stack} --query "
        "\"StackEvents[?ResourceStatus=='DELETE_FAILED'].[LogicalResourceId,"
        'ResourceStatusReason]". Then either resolve what blocks it (delete it by hand, or '
        "what still uses it) and delete again with `ecs-gpu destroy` (or aws cloudformation "
        f"delete-stack --stack-name {stack}), or keep it and delete the rest: aws "
        f"cloudformation delete-stack --stack-name {stack} --retain-resources "
        + (" ".join(ids) if ids else "LOGICAL_ID")
        + " (only a DELETE_FAILED stack takes --retain-resources; what it keeps is yours to "
        "delete later)."
    )
