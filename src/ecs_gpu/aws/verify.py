"""Prove a deployed service works: the metrics land, and the scaling loop moves.

``verify metrics`` is the check the reference module's 8.3.0 release never
ran: it reads the real series the host agent publishes (names from
:mod:`ecs_gpu.gpu_metric`) and, for a spec that scales on concurrency, the
series the task's sidecars publish (:mod:`ecs_gpu.demand_metric`), and names
each missing one with its likely cause. ``verify scaling`` is that module's
scaling test made safe: it publishes synthetic GPU utilization for the ASG,
or synthetic per-task concurrency for the service (weighted with ``Counts``
so the real samples do not dilute it), watches desiredCount rise and fall,
and always stops publishing on the way out. With a fast path in the spec it
first checks that the service has it (a step policy and its alarm), and
afterwards reads which policy made the first scale-out decision.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any, Final, Protocol

from botocore import exceptions as bx
from tenacity import (
    RetryCallState,
    Retrying,
    retry_if_result,
    stop_after_attempt,
    stop_after_delay,
    wait_fixed,
)

from ecs_gpu import demand_metric, gpu_metric
from ecs_gpu import fast_path as fp
from ecs_gpu.aws.errors import error_code, mapped, translate
from ecs_gpu.errors import ProblemsFound

if TYPE_CHECKING:
    from mypy_boto3_application_autoscaling import ApplicationAutoScalingClient
    from mypy_boto3_cloudwatch import CloudWatchClient
    from mypy_boto3_ecs import ECSClient

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


# --- verify scaling ---------------------------------------------------------------


@dataclass(frozen=True)
class ScalingResult:
    initial: int
    peak: int
    final: int
    scale_out_s: float
    scale_in_s: float
    published: int


class Pace(Protocol):
    """When a :class:`Publisher` puts its next datapoint.

    Production publishes every ``interval_s`` of real time (:class:`RealTime`);
    a test paces it by its own fake clock instead, so how many datapoints
    reach CloudWatch depends on the test's ticks, never on machine speed.
    """

    def wait(self, stop: threading.Event, interval_s: float) -> None:
        """Return when the next put is due, or at once when ``stop`` is set."""

    def wake(self) -> None:
        """``stop`` was just set: end a :meth:`wait` in progress."""


class RealTime:
    """One put every ``interval_s`` seconds of wall-clock time."""

    def wait(self, stop: threading.Event, interval_s: float) -> None:
        stop.wait(interval_s)

    def wake(self) -> None:
        """Nothing to do: :meth:`wait` already returns when ``stop`` is set."""


class Publisher:
    """Publishes synthetic GPU utilization on a background thread until stopped.

    A thread with a stop Event, so the main thread can be interrupted (Ctrl-C)
    at any point and :meth:`stop` still ends publishing at once. ``pace``
    decides when each next put goes (default: every ``interval_s`` seconds).
    """

    def __init__(
        self,
        cw: CloudWatchClient,
        asg: str,
        value: float,
        *,
        interval_s: float,
        counts: int = 1000,
        pace: Pace | None = None,
    ) -> None:
        self._cw = cw
        self._asg = asg
        self.value = value
        self._interval_s = interval_s
        self._pace: Pace = pace if pace is not None else RealTime()
        self._counts = counts
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self.published = 0
        self.error: Exception | None = None
        self._thread = threading.Thread(target=self._run, name="ecs-gpu-publisher", daemon=True)

    def put(self, value: float) -> None:
        # Counts=1000 outweighs the idle agent's real ~0 % samples in the
        # one-minute Average that target tracking reads (reference test).
        self._cw.put_metric_data(
            Namespace=gpu_metric.NAMESPACE,
            MetricData=[
                {
                    "MetricName": gpu_metric.UTILIZATION,
                    "Dimensions": gpu_metric.dimensions(self._asg),  # type: ignore[typeddict-item]
                    "Values": [value],
                    "Counts": [float(self._counts)],
                    "Unit": "Percent",
                }
            ],
        )

    def _run(self) -> None:
        while not self._stop.is_set():
            with self._lock:
                if self._stop.is_set():
                    return
                try:
                    self.put(self.value)
                except (bx.ClientError, bx.BotoCoreError) as e:
                    self.error = translate(e, "cloudwatch", "PutMetricData")
                    return
                self.published += 1
            self._pace.wait(self._stop, self._interval_s)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        """Stop publishing; returns only once no put is in flight."""
        self._stop.set()
        self._pace.wake()
        with self._lock:
            pass
        self._thread.join(timeout=60)

    @property
    def running(self) -> bool:
        return self._thread.is_alive()


class ConcurrencyPublisher(Publisher):
    """Publishes synthetic per-task concurrency for a service, as its sidecars would.

    High resolution (StorageResolution 1) like the sidecars, so the fast
    path's 10-second alarm sees each datapoint; ``Counts`` outweighs the real
    sidecars' samples in the Average the alarm and target tracking read.
    """

    def __init__(
        self,
        cw: CloudWatchClient,
        cluster: str,
        service: str,
        value: float,
        *,
        interval_s: float,
        counts: int = 1000,
        pace: Pace | None = None,
    ) -> None:
        super().__init__(cw, cluster, value, interval_s=interval_s, counts=counts, pace=pace)
        self._cluster = cluster
        self._service = service

    def put(self, value: float) -> None:
        self._cw.put_metric_data(
            Namespace=demand_metric.NAMESPACE,
            MetricData=[
                {
                    "MetricName": demand_metric.METRIC_NAME,
                    "Dimensions": demand_metric.dimensions(self._cluster, self._service),  # type: ignore[typeddict-item]
                    "Values": [value],
                    "Counts": [float(self._counts)],
                    "Unit": demand_metric.UNIT,
                    "StorageResolution": demand_metric.STORAGE_RESOLUTION,
                }
            ],
        )


def desired_count(ecs: ECSClient, cluster: str, service: str) -> int:
    with mapped("ecs", "DescribeServices"):
        try:
            resp = ecs.describe_services(cluster=cluster, services=[service])
        except bx.ClientError as e:
            if error_code(e) == "ClusterNotFoundException":
                resp = {"services": [], "failures": []}  # type: ignore[typeddict-item]
            else:
                raise
    services = [s for s in resp.get("services", []) if s.get("status") == "ACTIVE"]
    if not services:
        raise ProblemsFound(
            f"ECS service {service} in cluster {cluster} not found or not ACTIVE. "
            "Fix: deploy the spec first (`ecs-gpu deploy SPEC`)."
        )
    return int(services[0]["desiredCount"])


def scaling_bounds(
    appscaling: ApplicationAutoScalingClient, resource_id: str
) -> tuple[int, int] | None:
    """(min, max) of the service's scalable target, or None when there is none."""
    with mapped("application-autoscaling", "DescribeScalableTargets"):
        found = appscaling.describe_scalable_targets(
            ServiceNamespace="ecs",
            ResourceIds=[resource_id],
            ScalableDimension="ecs:service:DesiredCount",
        ).get("ScalableTargets", [])
    if not found:
        return None
    return int(found[0]["MinCapacity"]), int(found[0]["MaxCapacity"])


def check_can_scale(bounds: tuple[int, int] | None, resource_id: str, initial: int) -> None:
    """Refuse a scaling test that could never pass, before it changes anything."""
    if bounds is None:
        raise ProblemsFound(
            f"no Application Auto Scaling target for {resource_id}: nothing would react to the "
            "metric. Fix: deploy the spec (`ecs-gpu deploy SPEC`), which creates it."
        )
    _lo, hi = bounds
    if initial >= hi:
        raise ProblemsFound(
            f"{resource_id} already runs {initial} task(s), its maximum ({hi}): a scale-out "
            "cannot be observed. Fix: raise [scaling] max_tasks and deploy, or wait for the "
            "service to scale in."
        )


def run_scaling_test(
    cw: CloudWatchClient,
    ecs: ECSClient,
    *,
    cluster: str,
    service: str,
    asg: str,
    high: float = 100.0,
    low: float = 0.0,
    publish_interval_s: float = 30.0,
    poll_s: float = 15.0,
    scale_out_timeout_s: float = 1200.0,
    scale_in_timeout_s: float = 1800.0,
    on_progress: Callable[[str, int, float, int], None] = lambda p, d, t, n: None,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
    publisher: Publisher | None = None,
    concurrency: bool = False,
    fast_path: bool = True,
    pace: Pace | None = None,
) -> ScalingResult:
    """Drive desiredCount up by one with a high signal, then back down.

    GPU utilization for the ASG by default; with ``concurrency``, per-task
    concurrency for the service (``high`` above the fast path's threshold,
    or with ``fast_path`` False above the target; ``low`` below the target).
    ``on_progress(phase, desired, elapsed_s, published)`` after each poll.
    ``pace`` paces the publisher this creates (default: real time).
    The publisher is stopped on every exit path, KeyboardInterrupt included.
    """
    initial = desired_count(ecs, cluster, service)
    if publisher is not None:
        pub = publisher
    elif concurrency:
        pub = ConcurrencyPublisher(
            cw, cluster, service, high, interval_s=publish_interval_s, pace=pace
        )
    else:
        pub = Publisher(cw, asg, high, interval_s=publish_interval_s, pace=pace)
    if concurrency:
        what = (
            f"{demand_metric.METRIC_NAME} of {cluster}/{service}",
            (
                "the fast path's alarm or step policy is missing or reads another series "
                "(`ecs-gpu doctor`); the concurrency target-tracking policy is missing; the "
                "service is at its maximum"
                if fast_path
                else "the concurrency target-tracking policy is missing or tracks another "
                "series (`ecs-gpu doctor`); its alarm needs three one-minute datapoints above "
                "the target, more than this timeout; the service is at its maximum"
            ),
            "the CPU or GPU-guard policy keeps it up (scale-in needs every policy to agree), "
            "the scale-in cooldown is longer than the timeout, or scale-in is disabled on a "
            "policy",
        )
    else:
        what = (
            f"{gpu_metric.UTILIZATION} for {asg}",
            "the GPU target-tracking policy is missing or tracks another metric/dimension "
            '(`ecs-gpu doctor`); with gpu_metric = "task-gpus" the policy also needs ECS\'s '
            f"{gpu_metric.RESERVATION_METRIC} of the cluster, written only while a task runs "
            "(doctor MET004); its alarm needs more evaluation periods than this timeout; the "
            "service is at its maximum",
            "the CPU policy keeps it up (scale-in needs every policy to agree), the scale-in "
            "cooldown is longer than the timeout, or scale-in is disabled on a policy",
        )
    pub.value = high
    pub.start()
    try:
        peak, out_s = _wait_for(
            "scale-out",
            lambda d: d >= initial + 1,
            ecs,
            cluster,
            service,
            pub,
            scale_out_timeout_s,
            poll_s,
            on_progress,
            sleep,
            clock,
            f"desiredCount never rose above {initial} within {scale_out_timeout_s:.0f} s of "
            f"publishing {what[0]} = {high:g}. Likely causes: {what[1]}",
        )
        pub.value = low
        final, in_s = _wait_for(
            "scale-in",
            lambda d: d <= initial,
            ecs,
            cluster,
            service,
            pub,
            scale_in_timeout_s,
            poll_s,
            on_progress,
            sleep,
            clock,
            f"desiredCount did not return to {initial} within {scale_in_timeout_s:.0f} s of "
            f"publishing {what[0]} = {low:g}. Likely causes: {what[2]}",
        )
    finally:
        pub.stop()
    return ScalingResult(initial, peak, final, out_s, in_s, pub.published)


def _wait_for(
    phase: str,
    done: Callable[[int], bool],
    ecs: ECSClient,
    cluster: str,
    service: str,
    pub: Publisher,
    timeout_s: float,
    poll_s: float,
    on_progress: Callable[[str, int, float, int], None],
    sleep: Callable[[float], None],
    clock: Callable[[], float],
    timeout_message: str,
) -> tuple[int, float]:
    start = clock()
    while True:
        if pub.error is not None:
            raise pub.error
        desired = desired_count(ecs, cluster, service)
        elapsed = clock() - start
        on_progress(phase, desired, elapsed, pub.published)
        if done(desired):
            return desired, elapsed
        if elapsed >= timeout_s:
            raise ProblemsFound(timeout_message + ".")
        sleep(poll_s)


# --- the fast path's first decision ----------------------------------------------


@dataclass(frozen=True)
class Decision:
    """One Application Auto Scaling activity: who changed desiredCount, and how."""

    start: datetime
    cause: str
    description: str
    status: str
    # The step-scaling (fast path) policy's name, when the cause names it.
    fast_path_policy: str | None
    # Every StepScaling policy the service has (empty: no fast path deployed).
    step_policies: tuple[str, ...] = ()


@dataclass(frozen=True)
class StepPolicy:
    """A StepScaling policy of the service and the alarms that invoke it."""

    name: str
    # DescribeScalingPolicies lists the CloudWatch alarms whose actions
    # invoke the policy; a step policy with none never fires.
    alarms: tuple[str, ...]


def step_policies(appscaling: ApplicationAutoScalingClient, resource_id: str) -> list[StepPolicy]:
    """The service's StepScaling policies: the fast path (its only step policy)."""
    found: list[StepPolicy] = []
    with mapped("application-autoscaling", "DescribeScalingPolicies"):
        pages = appscaling.get_paginator("describe_scaling_policies").paginate(
            ServiceNamespace="ecs",
            ResourceId=resource_id,
            ScalableDimension="ecs:service:DesiredCount",
        )
        for page in pages:
            found += [
                StepPolicy(
                    name=p["PolicyName"],
                    alarms=tuple(a["AlarmName"] for a in p.get("Alarms", [])),
                )
                for p in page.get("ScalingPolicies", [])
                if p.get("PolicyType") == "StepScaling"
            ]
    return found


def describe_alarms(cw: CloudWatchClient, names: Sequence[str]) -> list[dict[str, Any]]:
    """The metric alarms of these names (those that exist)."""
    out: list[dict[str, Any]] = []
    with mapped("cloudwatch", "DescribeAlarms"):
        # DescribeAlarms takes at most 100 AlarmNames per call.
        for i in range(0, len(names), 100):
            pages = cw.get_paginator("describe_alarms").paginate(
                AlarmNames=list(names[i : i + 100]), AlarmTypes=["MetricAlarm"]
            )
            for page in pages:
                out += [dict(a) for a in page.get("MetricAlarms", [])]
    return out


def explain_missing_fast_path(
    policies: Sequence[StepPolicy],
    alarms: Sequence[Mapping[str, Any]],
    fast: fp.FastPath,
    *,
    resource_id: str,
    cluster: str,
    service: str,
) -> str | None:
    """What of the spec's fast path the service lacks; None when it is deployed.

    Deployed means a StepScaling policy that an alarm over the sidecars'
    series, at the spec's period and threshold, invokes (infra/scaling.py).
    """
    wanted = (
        f"a StepScaling policy invoked by an alarm on {demand_metric.NAMESPACE} "
        f"{demand_metric.METRIC_NAME} ({demand_metric.cli_dimensions(cluster, service)}) "
        f"at or above {fast.threshold:g} over {fast.period_s}-s periods"
    )
    head = f"the spec has a fast path ({wanted}), but {resource_id} "
    if not policies:
        return head + "has no StepScaling policy"
    names = ", ".join(p.name for p in policies)
    if not any(p.alarms for p in policies):
        return head + f"has StepScaling policy {names} with no alarm to invoke it: it never fires"
    by_name = {a["AlarmName"]: a for a in alarms}
    seen = []
    for p in policies:
        for name in p.alarms:
            alarm = by_name.get(name)
            if alarm is None:
                seen.append(f"alarm {name} does not exist")
                continue
            diff = fp.alarm_differences(alarm, cluster, service, fast.threshold)
            if not diff:
                return None
            seen.append(f"alarm {name}: it reads " + ", ".join(d[2] for d in diff))
    return head + (
        f"has StepScaling policy {names} whose alarm does not match it ({'; '.join(seen)}): "
        "the deployment is older than the spec, or was changed by hand"
    )


def check_fast_path(
    appscaling: ApplicationAutoScalingClient,
    cw: CloudWatchClient,
    fast: fp.FastPath,
    *,
    resource_id: str,
    cluster: str,
    service: str,
) -> str | None:
    """Read the service's step policies and their alarms; see :func:`explain_missing_fast_path`."""
    policies = step_policies(appscaling, resource_id)
    names = sorted({a for p in policies for a in p.alarms})
    alarms = describe_alarms(cw, names) if names else []
    return explain_missing_fast_path(
        policies, alarms, fast, resource_id=resource_id, cluster=cluster, service=service
    )


def first_decision(
    appscaling: ApplicationAutoScalingClient, resource_id: str, *, since: datetime
) -> Decision | None:
    """The first scaling activity on the service that started at or after ``since``.

    Application Auto Scaling writes the alarm and the policy that fired into
    the activity's Cause ("monitor alarm X in state ALARM triggered policy Y
    ..."), so a step policy's name there means the fast path decided.
    """
    fast = [p.name for p in step_policies(appscaling, resource_id)]
    found = []
    with mapped("application-autoscaling", "DescribeScalingActivities"):
        pages = appscaling.get_paginator("describe_scaling_activities").paginate(
            ServiceNamespace="ecs",
            ResourceId=resource_id,
            ScalableDimension="ecs:service:DesiredCount",
        )
        for page in pages:
            found += [a for a in page.get("ScalingActivities", []) if a["StartTime"] >= since]
    if not found:
        return None
    a = min(found, key=lambda x: x["StartTime"])
    cause = a.get("Cause", "")
    return Decision(
        start=a["StartTime"],
        cause=cause,
        description=a.get("Description", ""),
        status=a.get("StatusCode", ""),
        fast_path_policy=next((name for name in fast if name in cause), None),
        step_policies=tuple(fast),
    )
