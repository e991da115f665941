"""The task layer: one scalable target, a GPU and a CPU target-tracking policy on it.

Application Auto Scaling scales out when any policy asks and in only when all
agree (aws-semantics.md §1), so GPU-bound and CPU-bound load both add tasks
and the service shrinks only when both are slack. The GPU policy names its
series from :mod:`ecs_gpu.gpu_metric` and the ASG from :class:`Names`: the
same strings the host agent publishes under.
"""

from __future__ import annotations

from dataclasses import dataclass

from ecs_gpu import gpu_metric
from ecs_gpu.naming import Names
from ecs_gpu.node import ensure_node
from ecs_gpu.spec import Spec

ensure_node()

from aws_cdk import Duration  # noqa: E402
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


def gpu_metric_for(spec: Spec) -> cw.Metric:
    """The GPU utilization series the policy tracks (and the host agent writes)."""
    return cw.Metric(
        namespace=gpu_metric.NAMESPACE,
        metric_name=gpu_metric.UTILIZATION,
        dimensions_map={gpu_metric.DIMENSION: Names(spec.service.name).asg},
        statistic=gpu_metric.STATISTIC,
        period=Duration.seconds(gpu_metric.PERIOD_S),
    )


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
    return Scaling(target=target)
