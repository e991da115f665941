"""CloudFormation's answers as AWS sends them: stack events of a failed create, a stack.

The events of a create that fails on the Auto Scaling group (the root cause, the
cancellation of a sibling, the stack's summary, the rollback) and DescribeStacks of a
stack deploy made; every field is one botocore's model has, so a Stubber takes them.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from ecs_gpu.contracts.naming import Names

STACK = Names("vllm-g5").stack
STACK_ID = f"arn:aws:cloudformation:us-east-1:123456789012:stack/{STACK}/0f9a3b70-1111-2222-3333"
CS_ID = f"arn:aws:cloudformation:us-east-1:123456789012:changeSet/ecs-gpu-x/{'a' * 8}"
T0 = datetime(2026, 7, 18, 21, 0, 0, tzinfo=UTC)

ASG_LIMIT = (
    'Resource handler returned message: "You have requested more instances (1) than your '
    "current instance limit of 0 allows for the specified instance type. Please visit "
    'http://aws.amazon.com/contact-us/ec2-request to request an adjustment to this limit."'
)


def ev(n: int, logical: str, rtype: str, status: str, reason: str = "") -> dict[str, Any]:
    e: dict[str, Any] = {
        "StackId": STACK_ID,
        "EventId": f"{logical}-{status}-{n}",
        "StackName": STACK,
        "LogicalResourceId": logical,
        "PhysicalResourceId": STACK_ID if rtype == "AWS::CloudFormation::Stack" else "",
        "ResourceType": rtype,
        "Timestamp": T0 + timedelta(seconds=n),
        "ResourceStatus": status,
    }
    if reason:
        e["ResourceStatusReason"] = reason
    return e


STACK_T = "AWS::CloudFormation::Stack"
ASG_T = "AWS::AutoScaling::AutoScalingGroup"

# A create that fails on the ASG, as CloudFormation reports it: the root cause,
# then a cancellation for the sibling still in flight, then the stack's own
# summary, then the rollback. Oldest first here; the API returns newest first.
ROLLBACK = [
    ev(0, STACK, STACK_T, "CREATE_IN_PROGRESS", "User Initiated"),
    ev(1, "Cluster", "AWS::ECS::Cluster", "CREATE_IN_PROGRESS"),
    ev(2, "LaunchTemplate", "AWS::EC2::LaunchTemplate", "CREATE_IN_PROGRESS"),
    ev(3, "Cluster", "AWS::ECS::Cluster", "CREATE_COMPLETE"),
    ev(4, "LaunchTemplate", "AWS::EC2::LaunchTemplate", "CREATE_COMPLETE"),
    ev(5, "Asg", ASG_T, "CREATE_IN_PROGRESS"),
    ev(5, "LogGroup", "AWS::Logs::LogGroup", "CREATE_IN_PROGRESS"),
    ev(40, "Asg", ASG_T, "CREATE_FAILED", ASG_LIMIT),
    ev(40, "LogGroup", "AWS::Logs::LogGroup", "CREATE_FAILED", "Resource creation cancelled"),
    ev(
        41,
        STACK,
        STACK_T,
        "ROLLBACK_IN_PROGRESS",
        "The following resource(s) failed to create: [LogGroup, Asg]. Rollback requested by user.",
    ),
    ev(50, "Asg", ASG_T, "DELETE_COMPLETE"),
    ev(51, "LogGroup", "AWS::Logs::LogGroup", "DELETE_COMPLETE"),
    ev(52, "Cluster", "AWS::ECS::Cluster", "DELETE_COMPLETE"),
    ev(53, "LaunchTemplate", "AWS::EC2::LaunchTemplate", "DELETE_COMPLETE"),
    ev(54, STACK, STACK_T, "ROLLBACK_COMPLETE"),
]


def describe_stack(status: str) -> dict[str, Any]:
    return {
        "Stacks": [
            {
                "StackId": STACK_ID,
                "StackName": STACK,
                "CreationTime": T0,
                "StackStatus": status,
                # What deploy tags a stack with (destroy refuses a stack without it).
                "Tags": [{"Key": "ecs-gpu:spec", "Value": STACK}],
            }
        ]
    }
