"""The task definition: EC2 only, awsvpc, whole GPUs per container, logs with a retention.

The server container gets a health check and start period from the design's
start-up times (``Design.startup``), /dev/shm from the spec, secrets read by the
execution role alone, and, with [service.metrics], the demand-metric sidecar of
demand_metric.py beside it.

``resourceRequirements`` lives inside the container definition and its value
is a string (field report: either mistake makes the GPU request silently vanish).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final

from aws_cdk import Aws, Duration, Fn, RemovalPolicy
from aws_cdk import aws_ecr as ecr
from aws_cdk import aws_ecs as ecs
from aws_cdk import aws_iam as iam
from aws_cdk import aws_logs as logs
from constructs import Construct

from ecs_gpu.contracts import demand_metric
from ecs_gpu.contracts.naming import Names
from ecs_gpu.design import Design, startup
from ecs_gpu.infra.network import retention
from ecs_gpu.spec import Spec
from ecs_gpu.spec.rules.service import server_share

CONTAINER_NAME: Final = "app"
LOG_STREAM_PREFIX: Final = "app"
# Sids are public: tests and `doctor` find statements by them.
SID_DEMAND_METRIC: Final = "DemandMetricPublish"
SID_SECRETS: Final = "ReadContainerSecrets"
SID_PARAMETERS: Final = "ReadContainerParameters"
# Secrets Manager appends "-" and 6 random characters to a secret's name in its ARN.
_RANDOM_SUFFIX_RE = re.compile(r"-[A-Za-z0-9]{6}$")
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
    # The demand-metric sidecar; None without [service.metrics].
    sidecar: ecs.ContainerDefinition | None


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


def container_split(spec: Spec) -> tuple[int, int]:
    """(cpu units, MiB) of the server container: the task's size less the sidecar's share.

    spec/rules/service.py's _sidecar_room refuses a task too small to share, naming the file.
    """
    return server_share(spec.service)


def secret_resources(value_from: str) -> tuple[str, list[str]]:
    """(IAM action, resource ARNs) that let the execution role read one container secret.

    A Secrets Manager ``valueFrom`` may end in ``:json-key:version-stage:version-id``;
    IAM wants the secret's ARN, which ends in ``-`` and 6 random characters.
    A name-only (partial) ARN gets that suffix as ``-??????``; a name that
    already ends like the suffix may be either, so both forms are allowed.
    """
    parts = value_from.split(":")
    if parts[2] == "ssm":
        return "ssm:GetParameters", [value_from]
    arn = ":".join(parts[:7])  # arn:partition:secretsmanager:region:account:secret:name
    if _RANDOM_SUFFIX_RE.search(parts[6]):
        return "secretsmanager:GetSecretValue", [arn, arn + "-??????"]
    return "secretsmanager:GetSecretValue", [arn + "-??????"]


def _secret_statements(spec: Spec) -> list[iam.PolicyStatement]:
    """One statement per action over exactly the spec's secrets."""
    by_action: dict[str, list[str]] = {}
    for value_from in spec.service.secrets.values():
        action, arns = secret_resources(value_from)
        by_action.setdefault(action, [])
        by_action[action] += [a for a in arns if a not in by_action[action]]
    sids = {"secretsmanager:GetSecretValue": SID_SECRETS, "ssm:GetParameters": SID_PARAMETERS}
    return [
        iam.PolicyStatement(sid=sids[action], actions=[action], resources=arns)
        for action, arns in sorted(by_action.items())
    ]


def build_task(scope: Construct, design: Design) -> Task:
    """Task definition: the GPU server container and, with metrics, the demand sidecar."""
    spec = design.spec
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
    # Confused-deputy guard: ECS may assume the task role only for tasks of
    # this account (AWS's own ECS trust-policy examples carry the condition).
    role = task.task_role.node.default_child
    assert isinstance(role, iam.CfnRole)
    role.add_property_override(
        "AssumeRolePolicyDocument.Statement.0.Condition",
        {"StringEquals": {"aws:SourceAccount": Aws.ACCOUNT_ID}},
    )
    cpu, memory = container_split(spec)
    timings = design.startup.health
    shm = svc.shm_mib
    container = task.add_container(
        CONTAINER_NAME,
        image=container_image(scope, svc.image),
        essential=True,
        cpu=cpu,
        memory_limit_mib=memory,
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
        health_check=ecs.HealthCheck(
            command=startup.health_check_command(svc.container_port, svc.health_check_path),
            start_period=Duration.seconds(timings.start_period_s),
            interval=Duration.seconds(timings.interval_s),
            timeout=Duration.seconds(timings.timeout_s),
            retries=timings.retries,
        ),
        # NCCL between a task's GPUs needs far more /dev/shm than Docker's 64 MiB.
        linux_parameters=(
            ecs.LinuxParameters(scope, "ServerLinuxParameters", shared_memory_size=shm)
            if shm is not None
            else None
        ),
    )
    if svc.secrets:
        cfn = task.node.default_child
        assert isinstance(cfn, ecs.CfnTaskDefinition)
        # valueFrom is the spec's string as written (with any json-key tail);
        # CDK's Secret classes would want construct objects for each ARN.
        cfn.add_property_override(
            "ContainerDefinitions.0.Secrets",
            [{"Name": k, "ValueFrom": v} for k, v in sorted(svc.secrets.items())],
        )
        for statement in _secret_statements(spec):
            task.add_to_execution_role_policy(statement)
    sidecar = _add_sidecar(scope, design, task, container, log_group)
    return Task(definition=task, container=container, log_group=log_group, sidecar=sidecar)


def _with_script_sub(env: dict[str, str]) -> dict[str, str]:
    """The sidecar's environment with its script as the Fn::Sub body it is
    (demand_metric.SCRIPT_ENV: every "${" written "${!", resolved by CloudFormation)."""
    return {**env, demand_metric.SCRIPT_ENV: Fn.sub(env[demand_metric.SCRIPT_ENV])}


def _add_sidecar(
    scope: Construct,
    design: Design,
    task: ecs.TaskDefinition,
    server: ecs.ContainerDefinition,
    log_group: logs.LogGroup,
) -> ecs.ContainerDefinition | None:
    """The demand-metric sidecar (demand_metric.py) and the task role's one permission."""
    spec = design.spec
    metrics = spec.service.metrics
    if metrics is None:
        return None
    names = Names(spec.service.name)
    sidecar = task.add_container(
        demand_metric.SIDECAR_NAME,
        image=ecs.ContainerImage.from_registry(demand_metric.SIDECAR_IMAGE),
        # A dead sidecar must not stop a GPU task that took minutes to load;
        # the missing-metric alarm reports it instead.
        essential=False,
        cpu=demand_metric.SIDECAR_CPU_UNITS,
        memory_limit_mib=demand_metric.SIDECAR_MEMORY_MIB,
        entry_point=list(demand_metric.SIDECAR_ENTRY_POINT),
        command=list(demand_metric.SIDECAR_COMMAND),
        environment=_with_script_sub(
            demand_metric.sidecar_environment(
                metrics_port=metrics.port or spec.service.container_port,
                metrics_path=metrics.path,
                series=metrics.names,
                cluster_name=names.cluster,
                service_name=names.service,
                # A server still silent when ECS stops ignoring health checks is misconfigured.
                starting_max_s=design.startup.health.grace_period_s,
                absent_is_zero=metrics.absent_is_zero,
                waiting=metrics.waiting_name,
                completed=metrics.completed_name,
                drain_s=(
                    spec.scaling.backlog_drain_s
                    if spec.scaling.demand_estimate == "arrival-rate"
                    else None
                ),
            )
        ),
        logging=ecs.LogDrivers.aws_logs(
            stream_prefix=demand_metric.SIDECAR_NAME, log_group=log_group
        ),
    )
    # Start with the server: while it loads, the task is RUNNING (counted in
    # the capacity target tracking scales from) and the sidecar publishes 0
    # until the server first answers (data/demand-sidecar.sh).
    sidecar.add_container_dependencies(
        ecs.ContainerDependency(container=server, condition=ecs.ContainerDependencyCondition.START)
    )
    task.add_to_task_role_policy(
        iam.PolicyStatement(
            sid=SID_DEMAND_METRIC,
            actions=list(demand_metric.PUBLISH_ACTIONS),
            # PutMetricData has no resource-level permission; the condition
            # limits it to the contract's namespace.
            resources=["*"],
            conditions=demand_metric.iam_condition(),
        )
    )
    return sidecar
