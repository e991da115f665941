"""What ``verify metrics`` says of each signal's series, and why a missing one is missing.

Per signal (:data:`VERIFIED`): the status line's words while it waits, the title
of the series' table, the line when every query has data, the error's head
when one has none, and the likely causes of a missing metric from the dimension
sets ListMetrics has for it. Which queries must have data is the signal's row
in :data:`ecs_gpu.contracts.signals.SERIES` (``arrival_queries``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Final

from ecs_gpu.contracts import demand_metric, gpu_metric
from ecs_gpu.contracts.signals import (
    ASG_AVERAGE,
    CONCURRENCY,
    TASK_GPUS,
    SeriesNames,
    Signal,
)

# ListMetrics' dimension lists of one metric name (any dimensions, last two weeks).
DimensionSets = Sequence[Sequence[Mapping[str, str]]]


@dataclass(frozen=True, slots=True)
class ServerMetrics:
    """Where the service's server exposes Prometheus metrics ([service.metrics]): what a
    series a task publishes from them reads (verify's causes of a missing one)."""

    series: tuple[str, ...]
    port: int
    path: str


@dataclass(frozen=True, slots=True)
class Verified:
    """What ``verify metrics`` says of a series that must arrive."""

    # Its status line's words, its table's title and what the count counts.
    waiting: Callable[[SeriesNames], str]
    title: Callable[[SeriesNames], str]
    count_label: str
    # The line when every query has data, from each query's (count, latest).
    present: Callable[[SeriesNames, Sequence[tuple[int, float | None]]], str]
    # The error's head, from the metric names missing and the timeout.
    missing: Callable[[SeriesNames, Sequence[str], float], str]
    # Likely causes for one missing metric name, from ListMetrics' dimension sets.
    explain: Callable[[str, SeriesNames, DimensionSets, ServerMetrics | None], list[str]]


# --- the agent's GPU series -------------------------------------------------------

_GPU_COUNT: Final = len(gpu_metric.METRIC_NAMES)


def gpu_missing(asg_name: str, missing: Sequence[str], timeout_s: float) -> str:
    """The head of verify's error: which of the agent's series are missing."""
    return (
        f"{len(missing)} of {_GPU_COUNT} GPU series missing for ASG {asg_name} after "
        f"{timeout_s:.0f} s: {', '.join(missing)}."
    )


def _dimension_sets_text(sets: DimensionSets) -> str:
    """Up to three dimension sets as `Name=Value,...`, for "published under other dimensions"."""
    return "; ".join(
        ",".join(f"{d['Name']}={d['Value']}" for d in s) or "(no dimensions)" for s in sets[:3]
    )


def explain_gpu_missing(metric: str, asg: str, dimension_sets: DimensionSets) -> list[str]:
    """Likely causes for a series of the agent's with no recent datapoint.

    ``dimension_sets`` are the dimension lists ListMetrics returns for the
    same metric name in the namespace (any dimensions, last two weeks).
    """
    dimension, namespace = gpu_metric.DIMENSION, gpu_metric.NAMESPACE
    ours = [{"Name": dimension, "Value": asg}]
    sets = [[dict(d) for d in ds] for ds in dimension_sets]
    if any(sorted(s, key=lambda d: d["Name"]) == ours for s in sets):
        return [
            f"{metric} by {dimension}={asg} exists but has no datapoint in the "
            "window: the agent stopped publishing (instances terminated or replaced, agent "
            "crashed). Check `systemctl status amazon-cloudwatch-agent` on an instance, or run "
            "`ecs-gpu doctor`."
        ]
    other_asgs = sorted(
        {
            d["Value"]
            for s in sets
            if len(s) == 1
            for d in s
            if d["Name"] == dimension and d["Value"] != asg
        }
    )
    if other_asgs:
        return [
            f"wrong dimension value: {metric} is published for {dimension}="
            f"{', '.join(other_asgs)} but not {asg}. Check --asg / the spec's service name, "
            "and the agent's append_dimensions."
        ]
    if sets:
        shown = _dimension_sets_text(sets)
        return [
            f"wrong dimension: {metric} exists in {namespace} only as [{shown}], "
            f"not rolled up by {dimension} alone. The agent config needs "
            f'append_dimensions {{"{dimension}": '
            f'"{gpu_metric.APPEND_DIMENSION_VALUE}"}} and aggregation_dimensions '
            f'[["{dimension}"]].'
        ]
    return [
        f"nothing publishes {metric} in {namespace}. Likely causes: the host "
        "CloudWatch agent is not running or not collecting nvidia_gpu (a containerized agent "
        "cannot see the GPU); the instance role is denied cloudwatch:PutMetricData (the "
        "agent log shows AccessDenied); or the ASG has no running instance.",
    ]


_GPU: Final = Verified(
    waiting=lambda n: f"{_GPU_COUNT} GPU series of {n.asg}",
    title=lambda n: f"{gpu_metric.NAMESPACE} by {gpu_metric.DIMENSION}={n.asg}",
    count_label="datapoints",
    present=lambda n, series: f"All {_GPU_COUNT} GPU series of {n.asg} have datapoints.",
    missing=lambda n, missing, timeout_s: gpu_missing(n.asg, missing, timeout_s),
    explain=lambda metric, n, sets, server: explain_gpu_missing(metric, n.asg, sets),
)


# --- the sidecars' concurrency series -----------------------------------------------


def concurrency_present(
    cluster_name: str, service_name: str, series: Sequence[tuple[int, float | None]]
) -> str:
    """The series has datapoints: how many periods, and the latest mean per task."""
    periods, latest = series[0]
    return (
        f"The concurrency series {demand_metric.where(cluster_name, service_name)} has "
        f"datapoints: {periods} {demand_metric.ALARM_PERIOD_S}-s period(s), latest mean per "
        f"task {latest:g}."
    )


def explain_concurrency_missing(
    cluster_name: str,
    service_name: str,
    dimension_sets: DimensionSets,
    server: ServerMetrics | None,
) -> list[str]:
    """Likely causes for the series with no recent datapoint.

    ``dimension_sets`` from ListMetrics of the contract's name in its
    namespace; ``server``: the Prometheus series each sidecar sums, the port
    and path it reads them on ([service.metrics]). Tells "never published"
    (the sidecars cannot scrape, sum or publish) from "published under other
    dimensions" and from "published once, not lately".
    """
    at = demand_metric.where(cluster_name, service_name)
    ours = sorted(demand_metric.dimensions(cluster_name, service_name), key=lambda d: d["Name"])
    sets = [sorted((dict(d) for d in ds), key=lambda d: d["Name"]) for ds in dimension_sets]
    sidecar = f"{demand_metric.SIDECAR_NAME!r} container"
    if ours in sets:
        return [
            f"{at} exists but has no datapoint in the window: the sidecars stopped "
            f"publishing (no task runs, or every scrape fails now). Read the {sidecar}'s log in "
            "the task log group, or run `ecs-gpu doctor` (MET005)."
        ]
    if sets:
        return [
            f"datapoints under other dimensions: {demand_metric.METRIC_NAME} exists in "
            f"{demand_metric.NAMESPACE} only as [{_dimension_sets_text(sets)}], not "
            f"{demand_metric.cli_dimensions(cluster_name, service_name)}. The sidecar's "
            "DIMENSIONS come from the task definition: check --stack / the spec's service "
            "name, and redeploy the task definition (`ecs-gpu deploy`; doctor TD001 "
            "compares it)."
        ]
    if server is None:
        # Only a caller without the spec: a concurrency spec has [service.metrics].
        reads, logged = "the server's Prometheus series ([service.metrics])", "'GET ...'"
    else:
        reads = f"{' + '.join(server.series)} from http://127.0.0.1:{server.port}{server.path}"
        logged = f"'GET {server.path} on port {server.port}: ...'"
    return [
        f"no datapoint at all: no sidecar has ever published {at}. The {sidecar} "
        f"publishes only after it reads {reads}. Likely causes: the image serves no "
        "Prometheus metrics there (wrong [service.metrics] preset, port or path, or SGLang "
        f"without --enable-metrics; its log says {logged} or 'no answer on port'); none of "
        "those series is in "
        'the answer (its log says "none of ..."; set [service.metrics] running_metric / '
        "waiting_metric to the names the server uses); the task role is denied "
        f"cloudwatch:PutMetricData in {demand_metric.NAMESPACE} (its log shows "
        "AccessDenied); or no task runs."
    ]


_CONCURRENCY: Final = Verified(
    waiting=lambda n: f"{demand_metric.METRIC_NAME} of {n.service}",
    title=lambda n: (
        f"{demand_metric.where(n.cluster, n.service)}, {demand_metric.ALARM_PERIOD_S}-s periods"
    ),
    count_label="periods",
    present=lambda n, series: concurrency_present(n.cluster, n.service, series),
    missing=lambda n, missing, timeout_s: (
        f"The concurrency series {demand_metric.where(n.cluster, n.service)} has no datapoint "
        f"after {timeout_s:.0f} s."
    ),
    explain=lambda metric, n, sets, server: explain_concurrency_missing(
        n.cluster, n.service, sets, server
    ),
)

# Both GPU signals wait for the agent's one set of series.
VERIFIED: Final[Mapping[Signal, Verified]] = MappingProxyType(
    {TASK_GPUS: _GPU, ASG_AVERAGE: _GPU, CONCURRENCY: _CONCURRENCY}
)
