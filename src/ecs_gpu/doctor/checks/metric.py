"""Link 6, metric: the scaling signal arrives in CloudWatch."""

from __future__ import annotations

from typing import Any, Final

from ecs_gpu import demand_metric, gpu_metric
from ecs_gpu.doctor.checks.common import (
    collection_target,
    demand_names,
    metric_series,
    policy_metrics,
    policy_names_evidence,
    scales_on_concurrency,
    scales_on_gpu,
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
    doc="GetMetricData returns no datapoint for a series of the GPU metric contract (warning "
    "when no scaling policy reads it: concurrency without gpu_guard).",
)
def _metric_published(s: Snapshot, c: Check) -> list[Finding]:
    series = metric_series(s)
    empty = [n for n in gpu_metric.METRIC_NAMES if not series.get(n, {}).get("Values")]
    if not empty:
        return []
    target = collection_target(s)
    asg = target.get("asg") or "?"
    window = (s.get(COLLECTION_KEY) or {}).get("metric_window", {})
    evidence = [
        Evidence("metric_data", n, "Values", series.get(n, {}).get("Values", "no series"))
        for n in empty
    ] + [Evidence("_collection", "metric_window", "start/end", window)]
    agent = (
        "Run `ecs-gpu doctor --probe-hosts` to see the host agent: is "
        "amazon-cloudwatch-agent active, does its config collect nvidia_gpu, can it run "
        "nvidia-smi, and is cloudwatch:PutMetricData allowed on the instance role."
    )
    missing = (
        f"No datapoint of {gpu_metric.NAMESPACE} {', '.join(empty)} "
        f"({gpu_metric.DIMENSION}={asg}) in the window"
    )
    if scales_on_gpu(s) is False:
        # Concurrency without gpu_guard: no policy waits on this series.
        if target.get("signal") is not None:
            why = "the spec scales on concurrency without [scaling] gpu_guard"
            evidence += [
                Evidence("_collection", "target", "signal", target.get("signal")),
                Evidence("_collection", "target", "gpu_guard", target.get("gpu_guard")),
            ]
        else:
            why = "none of the service's scaling policies reads a GPU series"
            evidence.append(policy_names_evidence(s))
        alarm = target.get("missing_metric_alarm") or "the GPU missing-metric alarm"
        return [
            c.finding(
                evidence,
                f"{missing}. No scaling policy reads it ({why}), so the task count does not "
                "depend on it: only the dashboard's GPU panels (empty) and the missing-metric "
                f"alarm {alarm} (ALM002 once it fires) read it. {agent}",
                title="The GPU metric is not published (no policy reads it)",
                severity="warning",
            )
        ]
    return [
        c.finding(evidence, f"{missing}: the scaling policy tracks a series nobody writes. {agent}")
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
            "its tasks do not start first (the checks above: PLC002, SVC001, SVC002)."
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


# Id of the mean-per-task concurrency query (demand_metric.metric_data_queries's first).
_CONCURRENCY_ID: Final = demand_metric.metric_data_queries("cluster", "service")[0]["Id"]


@check(
    "MET005",
    link="metric",
    severity="error",
    title="The concurrency metric is not published",
    requires=("metric_data", "services"),
    doc="The service scales on concurrency, but GetMetricData returns no datapoint of the "
    "sidecars' per-task concurrency series (warning while the desired count is 0).",
)
def _concurrency_published(s: Snapshot, c: Check) -> list[Finding]:
    if not scales_on_concurrency(s):
        return []
    found = [r for r in s["metric_data"] if r.get("Id") == _CONCURRENCY_ID]
    if not found:
        raise Unknown(
            f"metric_data has no {demand_metric.METRIC_NAME} series (a snapshot from an "
            "ecs-gpu that did not collect it); collect it again"
        )
    if found[0].get("Values"):
        return []
    cluster, service = demand_names(s)
    svc = next(iter(service_items(s)), {})
    running, desired = svc.get("runningCount"), svc.get("desiredCount")
    if not running:
        why = "no task runs, so no sidecar publishes" + (
            ": fix why the tasks do not start first (PLC002, SVC001, SVC002)."
            if desired
            else " (the service is scaled to 0; its first task will bring the series)."
        )
    else:
        why = (
            f"{running} task(s) run, yet none published in the window. Read the "
            f"{demand_metric.SIDECAR_NAME} container's log: it must reach the server's metrics "
            "endpoint ([service.metrics] port and path, the preset's series names) and the task "
            "role must allow cloudwatch:PutMetricData with "
            f"{demand_metric.NAMESPACE_CONDITION_KEY}={demand_metric.NAMESPACE} (TD001 checks "
            "the sidecar is there)."
        )
    window = (s.get(COLLECTION_KEY) or {}).get("metric_window", {})
    return [
        c.finding(
            [
                Evidence("metric_data", _CONCURRENCY_ID, "Values", found[0].get("Values", [])),
                Evidence("services", svc.get("serviceName", service), "runningCount", running),
                Evidence("_collection", "metric_window", "start/end", window),
            ],
            f"No datapoint of {demand_metric.NAMESPACE} {demand_metric.METRIC_NAME} "
            f"({demand_metric.cli_dimensions(cluster, service)}) in the window: the "
            f"concurrency policy and the fast path track a series nobody writes. Cause: {why}",
            severity="error" if desired else "warning",
        )
    ]
