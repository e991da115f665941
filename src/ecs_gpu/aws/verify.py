"""Prove a deployed service works: the metrics land (``verify metrics``).

The check the reference module's 8.3.0 release never ran: it reads the
real series that must arrive (``SignalPlan.arriving``: the host agent's GPU
series, and a tracked signal's own, such as the concurrency the task's
sidecars publish), waits for them, and asks ListMetrics where a missing one
went. What it reads and says of each is the signal's row, and the plan and the
verdict are :mod:`ecs_gpu.checks.verify.metrics`'s, so this module names no
signal. ``verify scaling`` (the loop moves) is :mod:`ecs_gpu.aws.verify_scaling`.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any, Final

from tenacity import (
    RetryCallState,
    Retrying,
    retry_if_result,
    stop_after_attempt,
    stop_after_delay,
    wait_fixed,
)

from ecs_gpu.aws.errors import AccessDenied, mapped
from ecs_gpu.checks.doctor.common import in_service_counts
from ecs_gpu.checks.verify.metrics import (
    Arrival,
    MetricsPlan,
    MetricsReport,
    Series,
    denied_note,
    idle_note,
    metrics_plan,
    no_host_problem,
)
from ecs_gpu.checks.verify.signal_words import ServerMetrics
from ecs_gpu.contracts import gpu_metric
from ecs_gpu.contracts.naming import Names
from ecs_gpu.contracts.signals import DEFAULT_GPU_SIGNAL, SERIES, SeriesNames, Signal
from ecs_gpu.design.spot import on_demand_claim, publishers

if TYPE_CHECKING:
    from mypy_boto3_autoscaling import AutoScalingClient
    from mypy_boto3_cloudwatch import CloudWatchClient
    from mypy_boto3_ecs import ECSClient

# Agent collects every 60 s and flushes every 60 s, and CloudWatch takes a
# minute or two to serve a datapoint: ten minutes holds several of each.
DEFAULT_WINDOW_S: Final = 600


# --- verify metrics ---------------------------------------------------------------


def _fetch(
    cw: CloudWatchClient,
    queries: Sequence[Mapping[str, Any]],
    *,
    window_s: float,
    now: datetime | None,
) -> list[Series]:
    """Datapoint count and latest value of each query's series (named by its Label)."""
    end = now or datetime.now(UTC)
    start = end - timedelta(seconds=window_s)
    values: dict[str, list[tuple[datetime, float]]] = {q["Id"]: [] for q in queries}
    with mapped("cloudwatch", "GetMetricData"):
        pages = cw.get_paginator("get_metric_data").paginate(
            MetricDataQueries=list(queries),  # type: ignore[arg-type]
            StartTime=start,
            # One period past now: the newest, still-open minute counts too.
            EndTime=end + timedelta(seconds=gpu_metric.PERIOD_S),
            ScanBy="TimestampDescending",
        )
        for page in pages:
            for r in page.get("MetricDataResults", []):
                got = zip(r.get("Timestamps", []), r.get("Values", []), strict=False)
                values.setdefault(r["Id"], []).extend(got)
    out = []
    for q in queries:
        pts = sorted(values.get(q["Id"], []), key=lambda p: p[0])
        latest = pts[-1] if pts else None
        metric = q.get("MetricStat", {}).get("Metric", {})
        out.append(
            Series(
                metric=q["Label"],
                datapoints=len(pts),
                latest=latest[1] if latest else None,
                namespace=metric.get("Namespace", ""),
                metric_name=metric.get("MetricName", q["Label"]),
            )
        )
    return out


def fetch_series(
    cw: CloudWatchClient,
    signal: Signal,
    names: SeriesNames,
    *,
    window_s: float = DEFAULT_WINDOW_S,
    now: datetime | None = None,
) -> list[Series]:
    """Datapoint count and latest value of each series ``signal``'s row says must arrive."""
    queries = SERIES[signal].arrival_queries(names)
    return _fetch(cw, queries, window_s=window_s, now=now)


def fetch_reservation(
    cw: CloudWatchClient,
    cluster: str,
    *,
    window_s: float = DEFAULT_WINDOW_S,
    now: datetime | None = None,
) -> Series:
    """AWS/ECS GPUReservation of ``cluster``: the divisor of the task-gpus policy."""
    return _fetch(cw, [gpu_metric.reservation_query(cluster)], window_s=window_s, now=now)[0]


def dimension_sets(
    cw: CloudWatchClient, namespace: str, metric_name: str
) -> list[list[dict[str, str]]]:
    """The dimension lists ListMetrics has for ``metric_name`` in ``namespace``."""
    sets: list[list[dict[str, str]]] = []
    with mapped("cloudwatch", "ListMetrics"):
        pages = cw.get_paginator("list_metrics").paginate(
            Namespace=namespace, MetricName=metric_name
        )
        for page in pages:
            for m in page.get("Metrics", []):
                sets.append(
                    [{"Name": d["Name"], "Value": d["Value"]} for d in m.get("Dimensions", [])]
                )
    return sets


def diagnose(
    cw: CloudWatchClient, arrival: Arrival, names: SeriesNames, server: ServerMetrics | None
) -> dict[str, list[str]]:
    """Likely causes for each missing metric of ``arrival``, from ListMetrics."""
    out: dict[str, list[str]] = {}
    for metric in arrival.missing:
        namespace = next(s.namespace for s in arrival.series if s.metric_name == metric)
        sets = dimension_sets(cw, namespace, metric)
        out[metric] = arrival.verified.explain(metric, names, sets, server)
    return out


def verify_metrics(
    cw: CloudWatchClient,
    names: SeriesNames,
    *,
    signals: Sequence[Signal] = (DEFAULT_GPU_SIGNAL,),
    timeout_s: float,
    interval_s: float = 30.0,
    window_s: float = DEFAULT_WINDOW_S,
    on_attempt: Callable[[int, list[Series]], None] = lambda n, s: None,
    sleep: Callable[[float], None] = time.sleep,
    server: ServerMetrics | None = None,
) -> MetricsReport:
    """Wait up to ``timeout_s`` until every series of ``signals`` has datapoints.

    ``signals`` as ``SignalPlan.arriving`` lists them (each attempt's list
    in that order); ``server`` says what a task's publisher reads, for the
    causes of a missing series it publishes.
    """

    n = 0

    def attempt() -> list[Arrival]:
        nonlocal n
        n += 1
        got = [
            Arrival(signal, tuple(fetch_series(cw, signal, names, window_s=window_s)))
            for signal in signals
        ]
        on_attempt(n, [s for a in got for s in a.series])
        return got

    def incomplete(arrivals: list[Arrival]) -> bool:
        return any(a.missing for a in arrivals)

    def last_result(state: RetryCallState) -> list[Arrival]:
        assert state.outcome is not None  # tenacity calls this only after an attempt
        result: list[Arrival] = state.outcome.result()
        return result

    attempts = max(1, int(timeout_s // max(interval_s, 1e-9)) + 1)
    retrying = Retrying(
        # Both bounds: the wall clock for real runs, the attempt count so an
        # injected no-op sleep cannot spin. AWS errors are not retried here
        # (botocore already retried throttling): they end the wait.
        stop=stop_after_delay(timeout_s) | stop_after_attempt(attempts),
        wait=wait_fixed(interval_s),
        retry=retry_if_result(incomplete),
        sleep=sleep,
        retry_error_callback=last_result,
    )
    arrivals: list[Arrival] = retrying(attempt)
    return MetricsReport(
        names=names,
        arrivals=tuple(
            a if not a.missing else replace(a, causes=diagnose(cw, a, names, server))
            for a in arrivals
        ),
    )


# --- the plan, from the groups and the service -----------------------------------


def single_group_metrics_plan(
    autoscaling: AutoScalingClient, ecs: ECSClient, names: Names, signals: Sequence[Signal]
) -> MetricsPlan:
    """Without [capacity.spot]: the one group's plan, with what a service at zero means.

    At desiredCount 0 (a scale-to-zero service asleep) no task's sidecar
    publishes, so only the agent's series are waited for; and with no instance in
    service either (managed scaling took the group to zero), nothing publishes by
    design: the :func:`idle_note`, exit 0. A service not found, or one that wants
    a task, waits for every series. DescribeServices or DescribeAutoScalingGroups
    denied: the plan as without them (every series), and a note naming the permission.
    """
    try:
        desired = service_desired(ecs, names.cluster, names.service)
        if desired != 0:
            return metrics_plan(names, signals)
        with mapped("autoscaling", "DescribeAutoScalingGroups"):
            groups = autoscaling.describe_auto_scaling_groups(
                AutoScalingGroupNames=[names.asg]
            ).get("AutoScalingGroups", [])
    except AccessDenied as e:
        return replace(metrics_plan(names, signals), note=denied_note(e.permission))
    if in_service_counts(groups).get(names.asg, 0) == 0:
        return MetricsPlan((), idle=idle_note(names, spot=False))
    return metrics_plan(names, signals, has_task=False)


def service_desired(ecs: ECSClient, cluster: str, service: str) -> int | None:
    """The service's desiredCount (DescribeServices); None when it is not ACTIVE (not
    deployed yet: then the rule reads a task as wanted)."""
    with mapped("ecs", "DescribeServices"):
        try:
            resp = ecs.describe_services(cluster=cluster, services=[service])
        except ecs.exceptions.ClusterNotFoundException:
            return None
    active = [s for s in resp.get("services", []) if s.get("status") == "ACTIVE"]
    return int(active[0]["desiredCount"]) if active else None


def spot_metrics_plan(
    autoscaling: AutoScalingClient,
    ecs: ECSClient,
    names: Names,
    signals: Sequence[Signal],
    on_demand_base: int,
    spot_percent: int | None = None,
) -> MetricsPlan:
    """With [capacity.spot]: the plan for the groups' InService instances now and whether
    the service wants a task (its desiredCount: at 0 the base needs no On-Demand host).

    At zero tasks with no host at all, a plan with nothing to wait for and the
    :func:`idle_note` (exit 0: a service scaled to zero is healthy, and nothing can
    publish); raises :func:`no_host_problem` when neither group has a host and a task
    is wanted (or the service is not found).
    """
    with mapped("autoscaling", "DescribeAutoScalingGroups"):
        pages = autoscaling.get_paginator("describe_auto_scaling_groups").paginate(
            AutoScalingGroupNames=[names.asg, names.spot_asg]
        )
        groups = [g for page in pages for g in page.get("AutoScalingGroups", [])]
    desired = service_desired(ecs, names.cluster, names.service)
    pub = publishers(
        names.asg,
        names.spot_asg,
        on_demand_base,
        in_service_counts(groups),
        has_task=desired != 0,
        spot_percent=spot_percent,
    )
    if not pub.groups and desired == 0:
        return MetricsPlan((), idle=idle_note(names))
    if not pub.groups:
        raise no_host_problem(names.asg, names.spot_asg)
    return metrics_plan(
        names, signals, pub, on_demand_claim(on_demand_base, spot_percent), has_task=desired != 0
    )
