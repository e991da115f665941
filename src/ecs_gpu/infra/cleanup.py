"""Delete safety: let CloudFormation delete a GPU group whose instances are scale-in protected.

With managed termination protection, ECS keeps every GPU instance
``ProtectedFromScaleIn`` and the group launches new ones protected. To
delete an Auto Scaling group, CloudFormation sets it to 0 and waits for the
instances to go; protected instances never go, so a plain stack delete or the
rollback of a failed create hangs in DELETE_IN_PROGRESS (aws/aws-cdk#18179,
#14732; aws/containers-roadmap#2862: ECS leaves the flags behind when its
capacity provider is deleted). ``ecs-gpu destroy`` unprotects first; this
handler does the same for every other way a stack is deleted, and only
then (:data:`RELEASE_ON`). This file is the Lambda function's whole source:
the template inlines it (``ZipFile``), so it imports only the standard library
and boto3 (both in the Lambda Python runtime), and :func:`release` is plain
logic over a client, tested without AWS.
"""

from __future__ import annotations

import json
import urllib.request
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mypy_boto3_autoscaling import AutoScalingClient
    from mypy_boto3_cloudformation import CloudFormationClient

# SetInstanceProtection takes at most 50 instance ids per call (API reference).
PROTECTION_BATCH = 50
# The terminating hook ECS managed draining adds to the group. With the
# capacity provider gone nobody completes it, and each terminating instance
# would wait out its heartbeat timeout.
ECS_DRAINING_HOOK_PREFIX = "ecs-managed-draining-termination-hook"
# Stack statuses in which a Delete means the group goes too: the stack is
# deleted (also a retry after DELETE_FAILED), or a failed create rolls back.
# CloudFormation also sends Delete when an update removes or replaces only this
# resource (in the update's cleanup) and when an update rolls back; the group
# then stays in service, and emptying it would take the fleet down, so any
# other status (UPDATE_COMPLETE_CLEANUP_IN_PROGRESS, UPDATE_ROLLBACK_*) leaves it.
RELEASE_ON = ("DELETE_IN_PROGRESS", "ROLLBACK_IN_PROGRESS")


def release(client: AutoScalingClient, group: str) -> list[str]:
    """Scale ``group`` to 0 without protection; return the instances unprotected.

    Order matters: first stop new launches from being protected, then clear
    the flag on the instances there are, so none is missed in between.
    A group that no longer exists has nothing to release.
    """
    found = client.describe_auto_scaling_groups(AutoScalingGroupNames=[group])
    if not found["AutoScalingGroups"]:
        return []
    client.update_auto_scaling_group(
        AutoScalingGroupName=group,
        MinSize=0,
        DesiredCapacity=0,
        NewInstancesProtectedFromScaleIn=False,
    )
    hooks = client.describe_lifecycle_hooks(AutoScalingGroupName=group)["LifecycleHooks"]
    for hook in hooks:
        name = hook.get("LifecycleHookName", "")
        if name.startswith(ECS_DRAINING_HOOK_PREFIX):
            client.delete_lifecycle_hook(AutoScalingGroupName=group, LifecycleHookName=name)
    instances = client.describe_auto_scaling_groups(AutoScalingGroupNames=[group])[
        "AutoScalingGroups"
    ]
    protected = [
        i["InstanceId"]
        for g in instances
        for i in g.get("Instances", [])
        if i.get("ProtectedFromScaleIn")
    ]
    for start in range(0, len(protected), PROTECTION_BATCH):
        client.set_instance_protection(
            AutoScalingGroupName=group,
            InstanceIds=protected[start : start + PROTECTION_BATCH],
            ProtectedFromScaleIn=False,
        )
    return protected


def response_body(event: dict[str, Any], status: str, reason: str) -> dict[str, Any]:
    """The custom-resource response CloudFormation expects at ``ResponseURL``."""
    physical = event.get("PhysicalResourceId") or f"{event['LogicalResourceId']}-release"
    return {
        "Status": status,
        "Reason": reason[:3000] or status,
        "PhysicalResourceId": physical,
        "StackId": event["StackId"],
        "RequestId": event["RequestId"],
        "LogicalResourceId": event["LogicalResourceId"],
        "NoEcho": False,
        "Data": {},
    }


def handle(
    event: dict[str, Any], client: AutoScalingClient, cfn: CloudFormationClient
) -> tuple[str, str]:
    """(status, reason) for one custom-resource event; only Delete of the whole stack acts.

    A failure is reported as FAILED with its message, never swallowed: a
    DELETE_FAILED that names the cause is better than a delete that hangs.
    """
    if event["RequestType"] != "Delete":
        return "SUCCESS", "nothing to do until the stack is deleted"
    group = str(event["ResourceProperties"]["AutoScalingGroupName"])
    try:
        stack = cfn.describe_stacks(StackName=event["StackId"])["Stacks"][0]["StackStatus"]
        if stack not in RELEASE_ON:
            return "SUCCESS", f"{group} left in service: stack is {stack}, not deleted"
        released = release(client, group)
    except Exception as e:  # any error must reach CloudFormation
        return "FAILED", f"could not release {group}: {type(e).__name__}: {e}"
    return "SUCCESS", f"{group}: scaled to 0, {len(released)} instance(s) unprotected"


def handler(event: dict[str, Any], context: Any) -> None:
    """Lambda entry point (``index.handler``): act, then always answer CloudFormation."""
    import boto3

    try:
        status, reason = handle(event, boto3.client("autoscaling"), boto3.client("cloudformation"))
    except Exception as e:  # no answer would hang the stack for an hour
        status, reason = "FAILED", f"{type(e).__name__}: {e}"
    print(json.dumps({"RequestType": event.get("RequestType"), "Status": status, "Reason": reason}))
    body = json.dumps(response_body(event, status, reason)).encode()
    request = urllib.request.Request(
        event["ResponseURL"],
        data=body,
        method="PUT",
        headers={"Content-Type": "", "Content-Length": str(len(body))},
    )
    with urllib.request.urlopen(request, timeout=30) as answer:
        answer.read()
