"""The task layer: one scalable target, a GPU and a CPU target-tracking policy on it.

Application Auto Scaling scales out when any policy asks and in only when all
agree (aws-semantics.md §1), so GPU-bound and CPU-bound load both add tasks
and the service shrinks only when both are slack. The GPU policy names its
series from :mod:`ecs_gpu.gpu_metric` and the ASG and cluster from
:class:`Names`: the same strings the host agent and ECS publish under.

With ``[scaling] gpu_metric = "task-gpus"`` (the default) the GPU policy
tracks metric math: the agent's ASG average scaled by ECS's GPUReservation,
i.e. the utilization of the GPUs tasks hold (gpu_metric.py says why). With
``"asg-average"`` it tracks the agent's series as is.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ecs_gpu import gpu_metric
from ecs_gpu.naming import Names
from ecs_gpu.node import ensure_node
from ecs_gpu.spec import Spec

ensure_node()

from aws_cdk import Duration  # noqa: E402
from aws_cdk import aws_applicationautoscaling as appscaling  # noqa: E402
from aws_cdk import aws_cloudwatch as cw  # noqa: E402
from aws_cdk import aws_ecs as ecs  # noqa: E402
from aws_cdk import aws_elasticloadbalancingv2 as elbv2  # noqa: E402

# Construct ids: the policies' logical ids derive from them, and tests and
# `doctor` find the policies by them.
GPU_POLICY_ID = "GpuUtilization"
CPU_POLICY_ID = "CpuUtilization"
REQUESTS_POLICY_ID = "RequestsPerTarget"


@dataclass(frozen=True)
class Scaling:
    target: ecs.ScalableTaskCount
    gpu_policy: appscaling.TargetTrackingScalingPolicy


def gpu_metric_for(spec: Spec) -> cw.Metric:
    """The agent's ASG-average GPU utilization series (what the host agent writes)."""
    return cw.Metric(
        namespace=gpu_metric.NAMESPACE,
        metric_name=gpu_metric.UTILIZATION,
        dimensions_map={gpu_metric.DIMENSION: Names(spec.service.name).asg},
        statistic=gpu_metric.STATISTIC,
        period=Duration.seconds(gpu_metric.PERIOD_S),
    )


def task_gpu_metrics(spec: Spec) -> list[dict[str, Any]]:
    """The policy's ``CustomizedMetricSpecification.Metrics`` for ``gpu_metric = "task-gpus"``.

    Two hidden queries (the agent's ASG average, ECS's GPUReservation of the
    cluster) and the expression over them that target tracking follows.
    Application Auto Scaling has no Period here: each query is evaluated per
    minute, the agent's and ECS's publishing interval.
    """
    names = Names(spec.service.name)
    return [
        {
            "Id": gpu_metric.UTILIZATION_ID,
            "MetricStat": {
                "Metric": {
                    "Namespace": gpu_metric.NAMESPACE,
                    "MetricName": gpu_metric.UTILIZATION,
                    "Dimensions": gpu_metric.dimensions(names.asg),
                },
                "Stat": gpu_metric.STATISTIC,
            },
            "ReturnData": False,
        },
        {
            "Id": gpu_metric.RESERVATION_ID,
            "MetricStat": {
                "Metric": {
                    "Namespace": gpu_metric.RESERVATION_NAMESPACE,
                    "MetricName": gpu_metric.RESERVATION_METRIC,
                    "Dimensions": gpu_metric.reservation_dimensions(names.cluster),
                },
                # ECS documents Average as the useful statistic of a reservation.
                "Stat": "Average",
            },
            "ReturnData": False,
        },
        {
            "Id": gpu_metric.TASK_GPU_EXPRESSION_ID,
            "Expression": gpu_metric.TASK_GPU_EXPRESSION,
            "Label": gpu_metric.TASK_GPU_LABEL,
            "ReturnData": True,
        },
    ]


def _use_task_gpu_metrics(policy: appscaling.TargetTrackingScalingPolicy, spec: Spec) -> None:
    """Make the GPU policy track :func:`task_gpu_metrics` instead of the plain series.

    CDK's L2 accepts only a direct metric for target tracking (aws-cdk issue
    #20659), so the L1 is overridden: the direct-metric keys go, ``Metrics``
    comes in. The L2 keeps the logical id, policy name, target value,
    cooldowns and scalable-target wiring.
    """
    cfn = policy.node.default_child
    if not isinstance(cfn, appscaling.CfnScalingPolicy):
        raise TypeError(f"unexpected policy child {type(cfn).__name__}")
    cms = "TargetTrackingScalingPolicyConfiguration.CustomizedMetricSpecification"
    for key in ("MetricName", "Namespace", "Dimensions", "Statistic", "Unit"):
        cfn.add_property_deletion_override(f"{cms}.{key}")
    cfn.add_property_override(f"{cms}.Metrics", task_gpu_metrics(spec))


def build_scaling(
    service: ecs.Ec2Service,
    spec: Spec,
    target_group: elbv2.ApplicationTargetGroup | None,
) -> Scaling:
    """Scalable target on the service's DesiredCount and its target-tracking policies."""
    sc = spec.scaling
    scale_in = Duration.seconds(sc.scale_in_cooldown_s)
    scale_out = Duration.seconds(sc.scale_out_cooldown_s)
    target = service.auto_scale_task_count(min_capacity=sc.min_tasks, max_capacity=sc.max_tasks)
    target.scale_to_track_custom_metric(
        GPU_POLICY_ID,
        metric=gpu_metric_for(spec),
        target_value=sc.gpu_target_percent,
        scale_in_cooldown=scale_in,
        scale_out_cooldown=scale_out,
    )
    # The L2 call returns nothing; its policy sits under the task count's
    # scalable target ("Target"), where CDK puts it.
    gpu_policy = target.node.find_child("Target").node.find_child(GPU_POLICY_ID)
    if not isinstance(gpu_policy, appscaling.TargetTrackingScalingPolicy):
        raise TypeError(f"unexpected GPU policy construct {type(gpu_policy).__name__}")
    if sc.gpu_metric == "task-gpus":
        _use_task_gpu_metrics(gpu_policy, spec)
    target.scale_on_cpu_utilization(
        CPU_POLICY_ID,
        target_utilization_percent=sc.cpu_target_percent,
        scale_in_cooldown=scale_in,
        scale_out_cooldown=scale_out,
    )
    lb = spec.load_balancer
    if lb is not None and lb.request_count_target is not None and target_group is not None:
        target.scale_on_request_count(
            REQUESTS_POLICY_ID,
            requests_per_target=lb.request_count_target,
            target_group=target_group,
            scale_in_cooldown=scale_in,
            scale_out_cooldown=scale_out,
        )
    return Scaling(target=target, gpu_policy=gpu_policy)
