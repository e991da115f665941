"""The GPU instance role: what the ECS agent, SSM and the host CloudWatch agent need, no more.

We write the ECS instance statements ourselves instead of letting
``Cluster.add_asg_capacity_provider`` add CDK's, because CDK's include
``logs:CreateLogStream``/``logs:PutLogEvents`` on ``*``; here log writes are
limited to the host log group, and ``cloudwatch:PutMetricData`` to the GPU
metric's namespace (the reference module's host agent got AccessDenied
without that statement: field report). Task logs need nothing here: on the
ECS AMIs ecs-init sets ECS_ENABLE_AWSLOGS_EXECUTIONROLE_OVERRIDE=true, so the
awslogs driver writes with the task execution role (aws/amazon-ecs-agent
README), which CDK scopes to the task log group.
"""

from __future__ import annotations

from dataclasses import dataclass

from aws_cdk import aws_iam as iam
from aws_cdk import aws_logs as logs
from constructs import Construct

from ecs_gpu import host
from ecs_gpu.contracts import gpu_metric
from ecs_gpu.contracts.naming import Names
from ecs_gpu.design import spot

SSM_CORE_POLICY = "AmazonSSMManagedInstanceCore"
# Sids are public: tests and `doctor` find statements by them.
SID_ECS_CLUSTER = "EcsAgentOnCluster"
SID_ECS_POLL = "EcsAgentPoll"
SID_ECS_DISCOVER = "EcsAgentDiscoverEndpoint"
SID_GPU_METRIC = "GpuMetricPublish"
SID_AGENT_TAGS = "AgentReadsAsgTag"
SID_HOST_LOGS = "HostLogsWrite"


@dataclass(frozen=True)
class InstanceRole:
    role: iam.Role
    policy: iam.Policy


def build_instance_role(
    scope: Construct,
    names: Names,
    cluster_arn: str,
    host_log_group: logs.ILogGroup,
    *,
    spot_draining: bool = False,
) -> InstanceRole:
    """The role the GPU instances run as, with one inline policy of exact statements.

    ``spot_draining`` ([capacity.spot]): the agent sets a noticed Spot instance
    DRAINING itself (spot.DRAIN_FLAG), which takes spot.DRAIN_ACTION.
    """
    role = iam.Role(
        scope,
        "InstanceRole",
        assumed_by=iam.ServicePrincipal("ec2.amazonaws.com"),
        description=f"ecs-gpu {names.service_name}: GPU container instances",
        # Session Manager (no SSH, no open port) is how `doctor` runs its
        # on-instance probe and how an operator gets a shell.
        managed_policies=[iam.ManagedPolicy.from_aws_managed_policy_name(SSM_CORE_POLICY)],
    )
    log_group_arn = host_log_group.log_group_arn  # ends in ":*", covers its streams
    statements = [
        # What AmazonEC2ContainerServiceforEC2Role grants the ECS agent, scoped
        # to this cluster where the action allows it.
        iam.PolicyStatement(
            sid=SID_ECS_CLUSTER,
            actions=[
                "ecs:RegisterContainerInstance",
                "ecs:DeregisterContainerInstance",
                "ecs:SubmitContainerStateChange",
                "ecs:SubmitTaskStateChange",
                "ecs:SubmitAttachmentStateChanges",
            ],
            resources=[cluster_arn],
        ),
        # The agent's long poll and telemetry (and, on Spot, its drain) act on
        # container instances,
        # whose ids exist only at run time; the condition pins them to this
        # cluster (the form CDK and the AWS managed policy use).
        iam.PolicyStatement(
            sid=SID_ECS_POLL,
            actions=[
                "ecs:Poll",
                "ecs:StartTelemetrySession",
                *([spot.DRAIN_ACTION] if spot_draining else []),
            ],
            resources=["*"],
            conditions={"ArnEquals": {"ecs:cluster": cluster_arn}},
        ),
        # DiscoverPollEndpoint has no resource-level permission (Service
        # Authorization Reference), so "*" is the only valid resource.
        iam.PolicyStatement(
            sid=SID_ECS_DISCOVER, actions=["ecs:DiscoverPollEndpoint"], resources=["*"]
        ),
        iam.PolicyStatement(
            sid=SID_GPU_METRIC,
            actions=list(host.AGENT_METRIC_ACTIONS),
            resources=["*"],
            conditions={"StringEquals": {"cloudwatch:namespace": gpu_metric.NAMESPACE}},
        ),
        iam.PolicyStatement(
            sid=SID_AGENT_TAGS, actions=list(host.AGENT_TAG_ACTIONS), resources=["*"]
        ),
        iam.PolicyStatement(
            sid=SID_HOST_LOGS, actions=list(host.AGENT_LOG_ACTIONS), resources=[log_group_arn]
        ),
    ]
    policy = iam.Policy(
        scope, "InstancePolicy", statements=statements, roles=[role], policy_name="ecs-gpu-host"
    )
    return InstanceRole(role=role, policy=policy)
