"""The task definition: EC2 only, awsvpc, whole GPUs per container, logs with a retention.

``resourceRequirements`` lives inside the container definition and its value
is a string (field report: both mistakes made the GPU request silently vanish).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final

from ecs_gpu.infra.network import retention
from ecs_gpu.naming import Names
from ecs_gpu.node import ensure_node
from ecs_gpu.spec import Spec

ensure_node()

from aws_cdk import RemovalPolicy  # noqa: E402
from aws_cdk import aws_ecr as ecr  # noqa: E402
from aws_cdk import aws_ecs as ecs  # noqa: E402
from aws_cdk import aws_logs as logs  # noqa: E402
from constructs import Construct  # noqa: E402

CONTAINER_NAME: Final = "app"
LOG_STREAM_PREFIX: Final = "app"
# <account>.dkr.ecr.<region>.amazonaws.com/<repository>[:tag|@digest]
_ECR_RE = re.compile(
    r"^(?P<account>\d{12})\.dkr\.ecr\.(?P<region>[a-z0-9-]+)\.amazonaws\.com(?P<cn>\.cn)?/"
    r"(?P<repo>[a-z0-9._/-]+?)(?::(?P<tag>[\w.-]+)|@(?P<digest>sha256:[0-9a-f]{64}))?$"
)


@dataclass(frozen=True)
class Task:
    definition: ecs.TaskDefinition
    container: ecs.ContainerDefinition
    log_group: logs.LogGroup


def is_ecr(image: str) -> bool:
    return ecr_repository(image) is not None


def ecr_repository(image: str) -> tuple[str, str] | None:
    """(repository ARN, tag or digest) of a private ECR image; None for any other registry."""
    m = _ECR_RE.match(image)
    if m is None:
        return None
    # China Regions' registries end in .cn and live in the aws-cn partition.
    partition = "aws-cn" if m["cn"] else "aws"
    arn = f"arn:{partition}:ecr:{m['region']}:{m['account']}:repository/{m['repo']}"
    return arn, m["digest"] or m["tag"] or "latest"


def container_image(scope: Construct, image: str) -> ecs.ContainerImage:
    """The image reference; a private ECR image also grants the execution role its pull."""
    ecr_image = ecr_repository(image)
    if ecr_image is None:
        return ecs.ContainerImage.from_registry(image)
    # An ECR repository object makes CDK grant ecr:BatchGetImage and friends
    # on that one repository to the execution role (from_registry grants
    # nothing and the pull would be denied).
    arn, tag_or_digest = ecr_image
    repo = ecr.Repository.from_repository_arn(scope, "ImageRepository", arn)
    return ecs.ContainerImage.from_ecr_repository(repo, tag_or_digest)


def build_task(scope: Construct, spec: Spec) -> Task:
    """Task definition with one GPU container as ``[service]`` describes it."""
    names = Names(spec.service.name)
    svc = spec.service
    log_group = logs.LogGroup(
        scope,
        "TaskLogs",
        log_group_name=names.task_log_group,
        retention=retention(svc.log_retention_days),
        # Named group: if destroy kept it, the next deploy of this service
        # name would fail on "already exists".
        removal_policy=RemovalPolicy.DESTROY,
    )
    task = ecs.TaskDefinition(
        scope,
        "TaskDefinition",
        family=names.task_family,
        compatibility=ecs.Compatibility.EC2,
        network_mode=ecs.NetworkMode.AWS_VPC,
        cpu=str(svc.cpu_units),
        memory_mib=str(svc.memory_mib),
    )
    container = task.add_container(
        CONTAINER_NAME,
        image=container_image(scope, svc.image),
        essential=True,
        cpu=svc.cpu_units,
        memory_limit_mib=svc.memory_mib,
        # Emits ResourceRequirements [{"Type": "GPU", "Value": "<n>"}] in the container.
        gpu_count=svc.gpus_per_task,
        command=svc.command,
        environment={
            **svc.environment,
            # ECS sets NVIDIA_VISIBLE_DEVICES only; an image not built on
            # nvidia/cuda needs the capabilities spelled out (aws-semantics.md §7).
            "NVIDIA_DRIVER_CAPABILITIES": svc.nvidia_driver_capabilities,
        },
        port_mappings=[ecs.PortMapping(container_port=svc.container_port)],
        logging=ecs.LogDrivers.aws_logs(stream_prefix=LOG_STREAM_PREFIX, log_group=log_group),
    )
    return Task(definition=task, container=container, log_group=log_group)
