"""Link 6, metric: the scaling signal arrives in CloudWatch."""

from __future__ import annotations

from typing import Any

from ecs_gpu import gpu_metric
from ecs_gpu.doctor.checks.common import (
    collection_target,
    metric_series,
    policy_metrics,
    service_items,
)
from ecs_gpu.doctor.checks.model import Check, Evidence, Finding, Unknown
from ecs_gpu.doctor.checks.registry import check
from ecs_gpu.doctor.snapshot import COLLECTION_KEY, Snapshot


@check(
    "MET001",
    link="metric",
    severity="error",
    title="The GPU metric is not published",
    requires=("metric_data",),
    doc="GetMetricData returns no datapoint for a series of the GPU metric contract.",
)
def _metric_published(s: Snapshot, c: Check) -> list[Finding]:
    series = metric_series(s)
    empty = [n for n in gpu_metric.METRIC_NAMES if not series.get(n, {}).get("Values")]
    if not empty:
        return []
    asg = collection_target(s).get("asg") or "?"
    window = (s.get(COLLECTION_KEY) or {}).get("metric_window", {})
    return [
        c.finding(
            [
                Evidence("metric_data", n, "Values", series.get(n, {}).get("Values", "no series"))
                for n in empty
            ]
            + [Evidence("_collection", "metric_window", "start/end", window)],
            f"No datapoint of {gpu_metric.NAMESPACE} {', '.join(empty)} "
            f"({gpu_metric.DIMENSION}={asg}) in the window: the scaling policy tracks a series "
            "nobody writes. Run `ecs-gpu doctor --probe-hosts` to see the host agent: is "
            "amazon-cloudwatch-agent active, does its config collect nvidia_gpu, can it run "
            "nvidia-smi, and is cloudwatch:PutMetricData allowed on the instance role.",
        )
    ]


def _reads_reservation(p: dict[str, Any]) -> bool:
    return any(
        (m.get("Namespace"), m.get("MetricName"))
        == (gpu_metric.RESERVATION_NAMESPACE, gpu_metric.RESERVATION_METRIC)
        for _, m in policy_metrics(p)
    )


@check(
    "MET004",
    link="metric",
    severity="error",
    title="The tracked GPU signal has no data",
    requires=("metric_data", "scaling_policies", "services"),
    doc="The agent's utilization series has datapoints but the GPUReservation divisor of the "
    "task-gpus policy has none (warning while the service's desired count is 0).",
)
def _tracked_signal_empty(s: Snapshot, c: Check) -> list[Finding]:
    policies = [p for p in s["scaling_policies"] if _reads_reservation(p)]
    if not policies:
        # asg-average: the policy tracks the agent's series itself (MET001).
        return []
    series = metric_series(s)
    util = series.get(gpu_metric.UTILIZATION, {}).get("Values")
    if not util:
        # Nothing is written at all: MET001 reports that, first in the chain.
        return []
    if gpu_metric.RESERVATION_METRIC not in series:
        raise Unknown(
            f"metric_data has no {gpu_metric.RESERVATION_METRIC} series (a snapshot from an "
            "ecs-gpu that did not collect it); collect it again"
        )
    if series[gpu_metric.RESERVATION_METRIC].get("Values"):
        return []
    target = collection_target(s)
    cluster = target.get("cluster") or "?"
    svc = next(iter(service_items(s)), {})
    running, desired = svc.get("runningCount"), svc.get("desiredCount")
    only_running = (
        "ECS publishes its metrics only for a cluster with a RUNNING task (ECS developer "
        "guide, 'Amazon ECS CloudWatch metrics')"
    )
    if running == 0 and desired:
        why = (
            f"the service wants {desired} task(s) but runs none, and {only_running}. Fix why "
            "its tasks do not start first (the checks above: GPU003, SVC001, TSK001)."
        )
    elif running == 0:
        why = (
            f"the service runs no task, and {only_running}. Keep a task running ([scaling] "
            "min_tasks >= 1 and the service's desired count above 0), or track the agent's "
            'series alone ([scaling] gpu_metric = "asg-average"), and redeploy.'
        )
    else:
        why = (
            "tasks run, yet ECS wrote no GPU reservation for the cluster in the window. If "
            "they reached RUNNING only minutes ago, run doctor again; otherwise look up "
            f"{gpu_metric.RESERVATION_NAMESPACE} {gpu_metric.RESERVATION_METRIC} "
            f"{gpu_metric.RESERVATION_DIMENSION}={cluster} in the CloudWatch console."
        )
    window = (s.get(COLLECTION_KEY) or {}).get("metric_window", {})
    return [
        c.finding(
            [
                Evidence(
                    "metric_data",
                    gpu_metric.RESERVATION_METRIC,
                    "Values",
                    series[gpu_metric.RESERVATION_METRIC].get("Values", []),
                ),
                Evidence("metric_data", gpu_metric.UTILIZATION, "Values", util[:3]),
                Evidence(
                    "scaling_policies",
                    policies[0].get("PolicyName", "?"),
                    "TargetTrackingScalingPolicyConfiguration.CustomizedMetricSpecification"
                    ".Metrics",
                    f"divides by {gpu_metric.RESERVATION_NAMESPACE}/"
                    f"{gpu_metric.RESERVATION_METRIC}",
                ),
                Evidence("services", target.get("service") or "?", "runningCount", running),
                Evidence("_collection", "metric_window", "start/end", window),
            ],
            f"The host agent writes {gpu_metric.UTILIZATION}, but the policy's task-gpus "
            f"expression divides it by {gpu_metric.RESERVATION_METRIC} of cluster {cluster}, "
            "which has no datapoint: the expression has none either, so target tracking is "
            f"blind (its alarms go INSUFFICIENT_DATA). Cause: {why}",
            severity="error" if desired else "warning",
        )
    ]
