"""cdk-nag AwsSolutions acknowledgements, each with the reason it is safe here.

cdk-nag v3 reads CDK's own ``Validations.of(construct).acknowledge(...)``.
Each finding is acknowledged by its granular id (``Rule[Finding]``) on the
one construct it fires on, never stack-wide, so any new finding elsewhere is
still reported by ``ecs-gpu validate``. :data:`ACKS` is the whole list;
docs/template.md repeats it for reviewers.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Final, Protocol

from aws_cdk import Acknowledgment, Validations
from constructs import IConstruct

from ecs_gpu.infra.task import is_ecr

if TYPE_CHECKING:
    # The parts, never infra.service: service imports this module, and this
    # module must stay importable first (tests/infra/test_nag.py).
    from ecs_gpu.contracts.naming import Names
    from ecs_gpu.infra.capacity import Capacity
    from ecs_gpu.infra.iam import InstanceRole
    from ecs_gpu.infra.loadbalancer import LoadBalancer
    from ecs_gpu.infra.task import Task
    from ecs_gpu.spec import Spec


class Acknowledged(Protocol):
    """What :func:`acknowledge` reads of a GpuService."""

    @property
    def spec(self) -> Spec: ...
    @property
    def names(self) -> Names: ...
    @property
    def instance_role(self) -> InstanceRole: ...
    @property
    def capacity(self) -> Capacity: ...
    @property
    def task(self) -> Task: ...
    @property
    def load_balancer(self) -> LoadBalancer | None: ...


IAM4_SSM_CORE: Final = (
    "AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/AmazonSSMManagedInstanceCore]"
)
IAM5_RESOURCE_STAR: Final = "AwsSolutions-IAM5[Resource::*]"


def iam5_asg(asg_name: str) -> str:
    """The IAM5 finding for the group's ARN, whose UUID segment is a wildcard."""
    return (
        "AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:autoscaling:<AWS::Region>:"
        f"<AWS::AccountId>:autoScalingGroup:*:autoScalingGroupName/{asg_name}]"
    )


@dataclass(frozen=True)
class Ack:
    """One accepted cdk-nag finding and the written reason it is safe here."""

    rule: str
    reason: str


# Keyed by what is acknowledged (one rule can be accepted on two constructs
# for two different reasons).
ACKS: Final[dict[str, Ack]] = {
    "ssm-core": Ack(
        IAM4_SSM_CORE,
        "AmazonSSMManagedInstanceCore is the AWS-maintained minimum for Session Manager: "
        "instances get no SSH key and no inbound port, and `ecs-gpu doctor` runs its "
        "read-only probe through SSM. AWS updates it when the SSM agent's needs change.",
    ),
    "instance-policy-star": Ack(
        IAM5_RESOURCE_STAR,
        "Only actions that have no resource-level permissions use '*', each narrowed where "
        "IAM allows: ecs:Poll/StartTelemetrySession by ArnEquals ecs:cluster = this cluster; "
        "cloudwatch:PutMetricData by StringEquals cloudwatch:namespace = the GPU metric "
        "namespace; ecs:DiscoverPollEndpoint and ec2:DescribeTags (the CloudWatch agent "
        "reads the instance's ASG tag for the AutoScalingGroupName dimension) accept only "
        "'*'. Log writes are limited to the host log group.",
    ),
    "ecr-auth-token-star": Ack(
        IAM5_RESOURCE_STAR,
        "ecr:GetAuthorizationToken has no resource-level permission, so its resource is "
        "'*'; the pull actions themselves (BatchGetImage, GetDownloadUrlForLayer, "
        "BatchCheckLayerAvailability) are limited to the one ECR repository of the image.",
    ),
    "asg-uuid": Ack(
        "AwsSolutions-IAM5[Resource::<the GPU group's ARN>]",
        "An Auto Scaling group's ARN holds a UUID assigned at creation; the wildcard is only "
        "that segment, and the group name after it is this stack's one GPU group.",
    ),
    "release-describe-star": Ack(
        IAM5_RESOURCE_STAR,
        "autoscaling:DescribeAutoScalingGroups and DescribeLifecycleHooks have no "
        "resource-level permissions; the actions that change anything are limited to "
        "this stack's GPU group.",
    ),
    "warm-pool-ecr-star": Ack(
        IAM5_RESOURCE_STAR,
        "ecr:GetAuthorizationToken (the warm pool's registry login before its pre-pull) has "
        "no resource-level permission; the pull actions are limited to the image's "
        "repository.",
    ),
    "asg-notifications": Ack(
        "AwsSolutions-AS3",
        "No one acts on ASG scaling notifications: the ECS capacity provider owns the "
        "group's size. Failed launches surface as ECS service events and in `ecs-gpu "
        "doctor`, and the missing-GPU-metric alarm fires when no instance reports.",
    ),
    "spot-ebs-encryption": Ack(
        "AwsSolutions-EC26",
        "The Spot group's launch template encrypts its one EBS volume (the root volume, "
        "Encrypted: true, as the On-Demand template, which passes this rule); cdk-nag "
        "cannot follow a mixed instances policy's reference to its launch template and "
        "throws instead of checking it.",
    ),
    "plain-environment": Ack(
        "AwsSolutions-ECS2",
        "The environment holds only non-secret settings: NVIDIA_DRIVER_CAPABILITIES, the "
        "user's [service] environment and the demand sidecar's metric names. Secrets go "
        "through [service] secrets, which the task definition passes as container secrets "
        "(Secrets Manager or SSM ARNs) that only the execution role can read.",
    ),
    "demand-metric-star": Ack(
        IAM5_RESOURCE_STAR,
        "cloudwatch:PutMetricData has no resource-level permission, so its resource is '*'; "
        "the condition cloudwatch:namespace = the concurrency metric's namespace "
        "(demand_metric.NAMESPACE) is the only narrowing IAM offers. It is the task role's "
        "only statement.",
    ),
    "public-listener": Ack(
        "AwsSolutions-EC23",
        "The spec lists 0.0.0.0/0 in load_balancer.ingress_cidrs: the internet-facing "
        "listener port is opened to the internet on purpose (spec.py notes it). Tasks "
        "accept traffic only from the load balancer's security group.",
    ),
    "alb-access-logs": Ack(
        "AwsSolutions-ELB2",
        "ALB access logs need an S3 bucket with a Region-specific ELB log-delivery policy "
        "and a lifecycle the user must own; request metrics and target health are in "
        "CloudWatch, and the tasks log every request to the task log group.",
    ),
}


def ack(construct: IConstruct, key: str, *, rule: str | None = None) -> None:
    """Acknowledge one cdk-nag finding on one construct (and its children), with its reason.

    ``rule`` replaces the ACKS entry's id where the id names a resource (iam5_asg).
    """
    a = ACKS[key]
    Validations.of(construct).acknowledge(Acknowledgment(id=rule or a.rule, reason=a.reason))


def acknowledge(svc: Acknowledged) -> None:
    """Acknowledge the findings GpuService accepts, each on the construct it concerns."""
    ack(svc.instance_role.role, "ssm-core")
    ack(svc.instance_role.policy, "instance-policy-star")
    ack(svc.capacity.asg, "asg-notifications")
    asg_rule = iam5_asg(svc.names.asg)
    release = svc.capacity.release.policy
    ack(release, "asg-uuid", rule=asg_rule)
    ack(release, "release-describe-star")
    spot = svc.capacity.spot
    if spot is not None:
        ack(spot.asg, "asg-notifications")
        ack(spot.asg, "spot-ebs-encryption")
        # The release function empties the Spot group too.
        ack(release, "asg-uuid", rule=iam5_asg(svc.names.spot_asg))
    warm = svc.capacity.warm_pool
    if warm is not None:
        ack(warm.policy, "asg-uuid", rule=asg_rule)
        if is_ecr(svc.spec.service.image):
            ack(warm.policy, "warm-pool-ecr-star")
    ack(svc.task.definition, "plain-environment")
    if svc.task.sidecar is not None:
        ack(svc.task.definition.task_role, "demand-metric-star")
    # An ECR image gave the execution role pull rights on its repository.
    if is_ecr(svc.spec.service.image):
        execution_role = svc.task.definition.execution_role
        if execution_role is None:  # awslogs and the ECR pull both create it
            raise TypeError("an ECR image's task definition has no execution role")
        ack(execution_role, "ecr-auth-token-star")
    lb = svc.load_balancer
    lb_spec = svc.spec.load_balancer
    if lb is not None and lb_spec is not None:
        ack(lb.alb, "alb-access-logs")
        open_to_all = any(c.endswith("/0") for c in lb_spec.ingress_cidrs or [])
        if lb_spec.scheme == "internet-facing" and open_to_all:
            ack(lb.security_group, "public-listener")
