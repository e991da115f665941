"""Prove a deployed service works: the metrics land (``verify metrics``).

The check the reference module's 8.3.0 release never ran: it reads the
real series the host agent publishes (names from :mod:`ecs_gpu.gpu_metric`)
and, for a spec that scales on concurrency, the series the task's sidecars
publish (:mod:`ecs_gpu.demand_metric`), and names each missing one with its
likely cause. ``verify scaling`` (the loop moves) is
:mod:`ecs_gpu.aws.verify_scaling`.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
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

from ecs_gpu import demand_metric, gpu_metric
from ecs_gpu.aws.errors import mapped
from ecs_gpu.errors import ProblemsFound
from ecs_gpu.naming import Names
from ecs_gpu.signals import SignalPlan
from ecs_gpu.spec import Spec

if TYPE_CHECKING:
    from mypy_boto3_cloudwatch import CloudWatchClient

# Agent collects every 60 s and flushes every 60 s, and CloudWatch takes a
# minute or two to serve a datapoint: ten minutes holds several of each.
DEFAULT_WINDOW_S: Final = 600


# --- verify metrics ---------------------------------------------------------------


@dataclass(frozen=True)
class Series:
    metric: str
    datapoints: int
    latest: float | None

    @property
    def present(self) -> bool:
        return self.datapoints > 0


@dataclass(frozen=True)
class ConcurrencySource:
    """Where a concurrency spec's sidecars read and what they publish (for the causes)."""

    cluster: str
    service: str
    # The Prometheus series each sidecar sums ([service.metrics] names).
    prometheus_series: tuple[str, ...]
    port: int
    path: str

    @property
    def where(self) -> str:
        return (
            f"{demand_metric.NAMESPACE} {demand_metric.METRIC_NAME} "
            f"({demand_metric.cli_dimensions(self.cluster, self.service)})"
        )


@dataclass(frozen=True)
class MetricsReport:
    asg: str
    series: tuple[Series, ...]
    # metric name -> likely causes, for each missing series (the concurrency
    # series under demand_metric.METRIC_NAME)
    causes: Mapping[str, list[str]] = field(default_factory=dict)
    # The concurrency queries' series (empty when the spec scales on a GPU signal).
    concurrency: tuple[Series, ...] = ()
    source: ConcurrencySource | None = None

    @property
    def gpu_missing(self) -> list[str]:
        return [s.metric for s in self.series if not s.present]

    @property
    def concurrency_missing(self) -> bool:
        return any(not s.present for s in self.concurrency)

    @property
    def missing(self) -> list[str]:
        more = [demand_metric.METRIC_NAME] if self.concurrency_missing else []
        return self.gpu_missing + more

    @property
    def ok(self) -> bool:
        return not self.missing


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
        out.append(
            Series(
                metric=q["Label"],
                datapoints=len(pts),
                latest=latest[1] if latest else None,
            )
        )
    return out


def fetch_series(
    cw: CloudWatchClient,
    asg: str,
    *,
    window_s: float = DEFAULT_WINDOW_S,
    now: datetime | None = None,
) -> list[Series]:
    """Datapoint count and latest value of every contract series for ``asg``."""
    return _fetch(cw, gpu_metric.metric_data_queries(asg), window_s=window_s, now=now)


def fetch_reservation(
    cw: CloudWatchClient,
    cluster: str,
    *,
    window_s: float = DEFAULT_WINDOW_S,
    now: datetime | None = None,
) -> Series:
    """AWS/ECS GPUReservation of ``cluster``: the divisor of the task-gpus policy."""
    return _fetch(cw, [gpu_metric.reservation_query(cluster)], window_s=window_s, now=now)[0]


def fetch_concurrency(
    cw: CloudWatchClient,
    cluster: str,
    service: str,
    *,
    window_s: float = DEFAULT_WINDOW_S,
    now: datetime | None = None,
) -> list[Series]:
    """The sidecars' series at the fast path's 10-s period: mean per task and busiest task."""
    queries = demand_metric.metric_data_queries(cluster, service)
    return _fetch(cw, queries, window_s=window_s, now=now)


def _dimension_sets_text(sets: Sequence[Sequence[Mapping[str, str]]]) -> str:
    """Up to three dimension sets as `Name=Value,...`, for "published under other dimensions"."""
    return "; ".join(
        ",".join(f"{d['Name']}={d['Value']}" for d in s) or "(no dimensions)" for s in sets[:3]
    )


def explain_missing_concurrency(
    source: ConcurrencySource, dimension_sets: Sequence[Sequence[Mapping[str, str]]]
) -> list[str]:
    """Likely causes for a concurrency series with no recent datapoint.

    ``dimension_sets`` as for :func:`explain_missing`, from ListMetrics of
    the contract's name in its namespace. Tells "never published" (the
    sidecars cannot scrape, sum or publish) from "published under other
    dimensions" and from "published once, not lately".
    """
    metric = demand_metric.METRIC_NAME
    ours = sorted(demand_metric.dimensions(source.cluster, source.service), key=lambda d: d["Name"])
    sets = [sorted((dict(d) for d in ds), key=lambda d: d["Name"]) for ds in dimension_sets]
    sidecar = f"{demand_metric.SIDECAR_NAME!r} container"
    if ours in sets:
        return [
            f"{source.where} exists but has no datapoint in the window: the sidecars stopped "
            f"publishing (no task runs, or every scrape fails now). Read the {sidecar}'s log in "
            "the task log group, or run `ecs-gpu doctor` (MET005)."
        ]
    if sets:
        shown = _dimension_sets_text(sets)
        return [
            f"datapoints under other dimensions: {metric} exists in {demand_metric.NAMESPACE} "
            f"only as [{shown}], not "
            f"{demand_metric.cli_dimensions(source.cluster, source.service)}. The sidecar's "
            "DIMENSIONS come from the task definition: check --stack / the spec's service "
            "name, and redeploy the task definition (`ecs-gpu deploy`; doctor TD001 "
            "compares it)."
        ]
    wanted = " + ".join(source.prometheus_series)
    return [
        f"no datapoint at all: no sidecar has ever published {source.where}. The {sidecar} "
        f"publishes only after it reads {wanted} from "
        f"http://127.0.0.1:{source.port}{source.path}. Likely causes: the image serves no "
        "Prometheus metrics there (wrong [service.metrics] preset, port or path, or SGLang "
        "without --enable-metrics; its log says 'GET "
        f"{source.path} on port {source.port}: ...' or 'no answer on port'); none of those "
        "series is in "
        'the answer (its log says "none of ..."; set [service.metrics] running_metric / '
        "waiting_metric to the names the server uses); the task role is denied "
        f"cloudwatch:PutMetricData in {demand_metric.NAMESPACE} (its log shows "
        "AccessDenied); or no task runs."
    ]


def diagnose_concurrency(cw: CloudWatchClient, source: ConcurrencySource) -> list[str]:
    """Likely causes for the missing concurrency series, from ListMetrics."""
    sets: list[list[dict[str, str]]] = []
    with mapped("cloudwatch", "ListMetrics"):
        pages = cw.get_paginator("list_metrics").paginate(
            Namespace=demand_metric.NAMESPACE, MetricName=demand_metric.METRIC_NAME
        )
        for page in pages:
            for m in page.get("Metrics", []):
                sets.append(
                    [{"Name": d["Name"], "Value": d["Value"]} for d in m.get("Dimensions", [])]
                )
    return explain_missing_concurrency(source, sets)


def explain_missing(
    metric: str, asg: str, dimension_sets: Sequence[Sequence[Mapping[str, str]]]
) -> list[str]:
    """Likely causes for a series with no recent datapoint.

    ``dimension_sets`` are the dimension lists ListMetrics returns for the
    same metric name in the namespace (any dimensions, last two weeks).
    """
    ours = [{"Name": gpu_metric.DIMENSION, "Value": asg}]
    sets = [[dict(d) for d in ds] for ds in dimension_sets]
    if any(sorted(s, key=lambda d: d["Name"]) == ours for s in sets):
        return [
            f"{metric} by {gpu_metric.DIMENSION}={asg} exists but has no datapoint in the "
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
            if d["Name"] == gpu_metric.DIMENSION and d["Value"] != asg
        }
    )
    if other_asgs:
        return [
            f"wrong dimension value: {metric} is published for {gpu_metric.DIMENSION}="
            f"{', '.join(other_asgs)} but not {asg}. Check --asg / the spec's service name, "
            "and the agent's append_dimensions."
        ]
    if sets:
        shown = _dimension_sets_text(sets)
        return [
            f"wrong dimension: {metric} exists in {gpu_metric.NAMESPACE} only as [{shown}], "
            f"not rolled up by {gpu_metric.DIMENSION} alone. The agent config needs "
            f'append_dimensions {{"{gpu_metric.DIMENSION}": '
            f'"{gpu_metric.APPEND_DIMENSION_VALUE}"}} and aggregation_dimensions '
            f'[["{gpu_metric.DIMENSION}"]].'
        ]
    return [
        f"nothing publishes {metric} in {gpu_metric.NAMESPACE}. Likely causes: the host "
        "CloudWatch agent is not running or not collecting nvidia_gpu (a containerized agent "
        "cannot see the GPU); the instance role is denied cloudwatch:PutMetricData (the "
        "agent log shows AccessDenied); or the ASG has no running instance.",
    ]


def diagnose(cw: CloudWatchClient, asg: str, missing: Sequence[str]) -> dict[str, list[str]]:
    """Likely causes for each missing series, from ListMetrics."""
    out: dict[str, list[str]] = {}
    for metric in missing:
        sets: list[list[dict[str, str]]] = []
        with mapped("cloudwatch", "ListMetrics"):
            pages = cw.get_paginator("list_metrics").paginate(
                Namespace=gpu_metric.NAMESPACE, MetricName=metric
            )
            for page in pages:
                for m in page.get("Metrics", []):
                    sets.append(
                        [{"Name": d["Name"], "Value": d["Value"]} for d in m.get("Dimensions", [])]
                    )
        out[metric] = explain_missing(metric, asg, sets)
    return out


def verify_metrics(
    cw: CloudWatchClient,
    asg: str,
    *,
    timeout_s: float,
    interval_s: float = 30.0,
    window_s: float = DEFAULT_WINDOW_S,
    on_attempt: Callable[[int, list[Series]], None] = lambda n, s: None,
    sleep: Callable[[float], None] = time.sleep,
    concurrency: ConcurrencySource | None = None,
) -> MetricsReport:
    """Wait up to ``timeout_s`` until every contract series has datapoints.

    With ``concurrency``, the sidecars' series too (the GPU series first in
    each attempt's list, then the concurrency queries').
    """

    n = 0

    def attempt() -> list[Series]:
        nonlocal n
        n += 1
        series = fetch_series(cw, asg, window_s=window_s)
        if concurrency is not None:
            series += fetch_concurrency(
                cw, concurrency.cluster, concurrency.service, window_s=window_s
            )
        on_attempt(n, series)
        return series

    def incomplete(series: list[Series]) -> bool:
        return not all(s.present for s in series)

    def last_result(state: RetryCallState) -> list[Series]:
        assert state.outcome is not None  # tenacity calls this only after an attempt
        result: list[Series] = state.outcome.result()
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
    series: list[Series] = retrying(attempt)
    gpu_count = len(gpu_metric.METRIC_NAMES)
    report = MetricsReport(
        asg=asg,
        series=tuple(series[:gpu_count]),
        concurrency=tuple(series[gpu_count:]),
        source=concurrency,
    )
    if report.ok:
        return report
    causes = diagnose(cw, asg, report.gpu_missing)
    if concurrency is not None and report.concurrency_missing:
        causes[demand_metric.METRIC_NAME] = diagnose_concurrency(cw, concurrency)
    return MetricsReport(
        asg=asg,
        series=report.series,
        causes=causes,
        concurrency=report.concurrency,
        source=concurrency,
    )


# --- from the spec, and the verdict -----------------------------------------------


def concurrency_source(spec: Spec, names: Names) -> ConcurrencySource | None:
    """What the sidecars of ``spec`` read and publish; None when it scales on a GPU signal."""
    m = spec.service.metrics
    if not SignalPlan.of(spec.scaling).tracks_concurrency or m is None:
        return None
    return ConcurrencySource(
        cluster=names.cluster,
        service=names.service,
        prometheus_series=m.names,
        port=m.port or spec.service.container_port,
        path=m.path,
    )


def needs_divisor(spec: Spec) -> bool:
    """Whether a policy of ``spec`` divides by ECS's GPUReservation (reported, not required)."""
    # With signal "concurrency" no policy divides by GPUReservation (unless
    # the GPU guard does).
    return SignalPlan.of(spec.scaling).divides_by_reservation


def missing_problem(
    report: MetricsReport,
    asg: str,
    *,
    timeout_s: float,
    concurrency: ConcurrencySource | None = None,
) -> ProblemsFound:
    """Exit 1 naming each missing series of ``report`` with its likely causes."""
    total = len(gpu_metric.METRIC_NAMES)
    heads, lines = [], []
    if report.gpu_missing:
        heads.append(
            f"{len(report.gpu_missing)} of {total} GPU series missing for ASG {asg} after "
            f"{timeout_s:.0f} s: {', '.join(report.gpu_missing)}."
        )
    if report.concurrency_missing and concurrency is not None:
        heads.append(
            f"The concurrency series {concurrency.where} has no datapoint after {timeout_s:.0f} s."
        )
    for metric in report.missing:
        for cause in report.causes.get(metric, []):
            lines.append(f"  - {metric}: {cause}")
    return ProblemsFound(" ".join(heads) + "\n" + "\n".join(lines))
