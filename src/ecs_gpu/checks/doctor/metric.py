"""Link 6, metric: the scaling signal arrives in CloudWatch.

"Does it arrive" is one check per watched series (MET001 the agent's GPU
series, MET005 the sidecars' concurrency series), its id, words and who
publishes it from the signal's row (``signal_words.CHECKED[s]``), so a new
signal adds no code here. MET004 is the task-gpus policy's divisor.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from ecs_gpu.checks.doctor.common import (
    asleep,
    collection_target,
    in_service_counts,
    metric_series,
    policy_metrics,
    policy_names_evidence,
    register_per_series,
    series_at,
    service_items,
    tracks,
)
from ecs_gpu.checks.doctor.registry import check
from ecs_gpu.checks.doctor.signal_words import CHECKED, Checked
from ecs_gpu.checks.model import Check, CheckFn, Evidence, Finding, Unknown
from ecs_gpu.checks.snapshot import COLLECTION_KEY, Snapshot
from ecs_gpu.contracts import gpu_metric
from ecs_gpu.contracts.signals import SERIES, SeriesAt, Signal, SignalSeries
from ecs_gpu.design.spot import on_demand_claim, publishers


def _arrives(signals: tuple[Signal, ...]) -> CheckFn:
    """The "does it arrive" check of the series ``signals`` share (their row says what to say).

    A host's series (the agent's) must always arrive: an error while a policy
    tracks it, a warning when none does. A task's series (the sidecars')
    must only where a policy tracks it, since only then is its publisher
    deployed; with no task running none publishes, a warning while the
    desired count is 0.
    """
    series = SERIES[signals[0]]
    checked = CHECKED[signals[0]]
    by_task = series.published_by == "task"

    def arrives(s: Snapshot, c: Check) -> list[Finding]:
        tracked = tracks(s, signals)
        if by_task and tracked is None:
            raise Unknown(
                f"cannot tell whether the service scales on {checked.in_words}: the snapshot "
                "names no [scaling] signal (run doctor with the spec) and scaling_policies was "
                "not collected"
            )
        if by_task and not tracked:
            return []
        names = series_at(s)
        empty = _empty_queries(s, series, names)
        host = "runs" if by_task else _on_demand_host(s, names.asg)
        if not empty or host == "none by design":
            return []
        if not by_task and asleep(s) and _no_host(s, names.asg):
            # Scaled to zero and the group emptied: no agent runs to publish (the
            # template's missing-metric alarm reads 0 then, infra/observability.py).
            return []
        missing = _no_datapoint(s, series, names, empty)
        if by_task:
            return [_task_finding(s, c, checked, names, missing)]
        remedy = _hostless_remedy(s, names.asg) if host == "missing" else checked.remedy(0)
        if tracked is False and checked.untracked is not None:
            return [_untracked_finding(s, c, checked, missing, remedy)]
        return [
            c.finding(
                [*missing.evidence, missing.window],
                f"{missing.text}: {checked.followers} a series nobody writes. {remedy}",
            )
        ]

    return arrives


@dataclass(frozen=True)
class _Missing:
    """A series with no datapoint in the window: the sentence that says so, the evidence
    of each empty query, and the window's."""

    text: str
    evidence: list[Evidence]
    window: Evidence


def _empty_queries(s: Snapshot, series: SignalSeries, names: SeriesAt) -> list[dict[str, Any]]:
    """The series' queries that must have data and have none in the snapshot; Unknown
    when the snapshot holds none of them (an ecs-gpu that did not collect it)."""
    results = {r.get("Id"): r for r in s["metric_data"]}
    queries = series.arrival_queries(names)
    if not any(q["Id"] in results for q in queries):
        raise Unknown(
            f"metric_data has no {series.watched.metric_name} series (a snapshot from an "
            "ecs-gpu that did not collect it); collect it again"
        )
    return [q for q in queries if not results.get(q["Id"], {}).get("Values")]


def _no_datapoint(
    s: Snapshot, series: SignalSeries, names: SeriesAt, empty: list[dict[str, Any]]
) -> _Missing:
    """What says that the ``empty`` queries of ``series`` have no datapoint."""
    results = {r.get("Id"): r for r in s["metric_data"]}
    metrics = dict.fromkeys(q["MetricStat"]["Metric"]["MetricName"] for q in empty)
    dims = ",".join(f"{d['Name']}={d['Value']}" for d in series.watched.dimensions(names))
    return _Missing(
        text=f"No datapoint of {series.watched.namespace} {', '.join(metrics)} ({dims}) in the "
        "window",
        evidence=[
            Evidence(
                "metric_data",
                q["Label"],
                "Values",
                results.get(q["Id"], {}).get("Values", "no series"),
            )
            for q in empty
        ],
        window=Evidence(
            "_collection",
            "metric_window",
            "start/end",
            (s.get(COLLECTION_KEY) or {}).get("metric_window", {}),
        ),
    )


def _task_finding(
    s: Snapshot, c: Check, checked: Checked, names: SeriesAt, missing: _Missing
) -> Finding:
    """A task's series is missing: why no task publishes, or what to read where tasks run."""
    svc = next(iter(service_items(s)), {})
    running, desired = svc.get("runningCount"), svc.get("desiredCount")
    if not running:
        why = f"no task runs, so no {checked.publisher} publishes" + (
            ": fix why the tasks do not start first (PLC002, SVC001, SVC002)."
            if desired
            else " (the service is scaled to 0; its first task will bring the series)."
        )
    else:
        why = checked.remedy(running)
    evidence = [
        *missing.evidence,
        Evidence("services", svc.get("serviceName", names.service), "runningCount", running),
        missing.window,
    ]
    return c.finding(
        evidence,
        f"{missing.text}: {checked.followers} a series nobody writes. Cause: {why}",
        severity="error" if desired else "warning",
    )


def _untracked_finding(
    s: Snapshot, c: Check, checked: Checked, missing: _Missing, remedy: str
) -> Finding:
    """A host's series no policy tracks is missing: a warning naming what still reads it."""
    assert checked.untracked is not None  # the caller's condition
    untracked_title, untracked_readers = checked.untracked
    evidence = [*missing.evidence, missing.window]
    target = collection_target(s)
    if target.get("signal") is not None:
        why = f"the spec scales on {target.get('signal')} without [scaling] gpu_guard"
        evidence += [
            Evidence("_collection", "target", "signal", target.get("signal")),
            Evidence("_collection", "target", "gpu_guard", target.get("gpu_guard")),
        ]
    else:
        why = f"none of the service's scaling policies reads {checked.in_words}"
        evidence.append(policy_names_evidence(s))
    readers = untracked_readers(target.get("missing_metric_alarm"))
    return c.finding(
        evidence,
        f"{missing.text}. No scaling policy reads it ({why}), so the task count does not "
        f"depend on it: {readers}. {remedy}",
        title=untracked_title,
        severity="warning",
    )


def _on_demand_host(s: Snapshot, asg: str) -> Literal["runs", "none by design", "missing"]:
    """The On-Demand group ``asg``'s hosts as ecs_gpu.design.spot.publishers judges them (the
    rule ``verify metrics`` reads too): "none by design" with Spot when the group is
    empty and need not publish (no base, or no task; its missing-metric alarm reads it
    only while the group has an instance in service), "missing" when it is empty yet
    must run the base, "runs" otherwise (also without Spot or when the group was not
    collected: then its series must arrive)."""
    spot = collection_target(s).get("spot") or {}
    counts = in_service_counts(s.get("auto_scaling_groups") or [])
    if spot.get("asg") is None or spot.get("on_demand_base") is None or asg not in counts:
        return "runs"
    svc = next(iter(service_items(s)), {})
    pub = publishers(
        asg,
        spot["asg"],
        spot["on_demand_base"],
        counts,
        has_task=svc.get("desiredCount", 1) > 0,
        spot_percent=spot.get("spot_percent"),
    )
    if asg in pub.hostless:
        return "missing"
    return "runs" if asg in pub.groups else "none by design"


def _no_host(s: Snapshot, asg: str) -> bool:
    """Whether ``asg`` was collected with no InService instance (not collected: unknown,
    so False: its series must arrive)."""
    return in_service_counts(s.get("auto_scaling_groups") or []).get(asg) == 0


def _hostless_remedy(s: Snapshot, asg: str) -> str:
    spot = collection_target(s).get("spot") or {}
    claim = on_demand_claim(spot.get("on_demand_base") or 0, spot.get("spot_percent"))
    return (
        f"Cause: {asg} has no instance in service, yet {claim}, so no On-Demand host runs "
        "the agent. Fix the "
        "launches, not the agent: the Auto Scaling checks (ASG001 launch failures, ASG008 "
        "managed scaling) and the group's MaxSize."
    )


register_per_series("metric", lambda c: c.arrives, _arrives)


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
