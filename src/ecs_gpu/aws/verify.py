"""Prove a deployed service works: the GPU metric lands, and the scaling loop moves.

``verify metrics`` is the check the reference module's 8.3.0 release never
ran: it reads the real series the host agent publishes (names from
:mod:`ecs_gpu.gpu_metric`) and names each missing one with its likely
cause. ``verify scaling`` is that module's scaling test made safe: it
publishes synthetic GPU utilization for the ASG (weighted with ``Counts``
so the idle agent's real samples do not dilute it), watches desiredCount
rise and fall, and always stops publishing on the way out.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any, Final

from botocore import exceptions as bx
from tenacity import (
    RetryCallState,
    Retrying,
    retry_if_result,
    stop_after_attempt,
    stop_after_delay,
    wait_fixed,
)

from ecs_gpu import gpu_metric
from ecs_gpu.aws.errors import error_code, mapped, translate
from ecs_gpu.aws.facts import reservation_query
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
class MetricsReport:
    asg: str
    series: tuple[Series, ...]
    # metric name -> likely causes, for each missing series
    causes: Mapping[str, list[str]] = field(default_factory=dict)

    @property
    def missing(self) -> list[str]:
        return [s.metric for s in self.series if not s.present]

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
    return _fetch(cw, [reservation_query(cluster)], window_s=window_s, now=now)[0]


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
        shown = "; ".join(
            ",".join(f"{d['Name']}={d['Value']}" for d in s) or "(no dimensions)" for s in sets[:3]
        )
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
) -> MetricsReport:
    """Wait up to ``timeout_s`` until every contract series has datapoints."""

    n = 0

    def attempt() -> list[Series]:
        nonlocal n
        n += 1
        series = fetch_series(cw, asg, window_s=window_s)
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
    report = MetricsReport(asg=asg, series=tuple(series))
    if report.ok:
        return report
    return MetricsReport(asg=asg, series=report.series, causes=diagnose(cw, asg, report.missing))


# --- verify scaling ---------------------------------------------------------------


@dataclass(frozen=True)
class ScalingResult:
    initial: int
    peak: int
    final: int
    scale_out_s: float
    scale_in_s: float
    published: int


class Publisher:
    """Publishes synthetic GPU utilization on a background thread until stopped.

    A thread with a stop Event, so the main thread can be interrupted (Ctrl-C)
    at any point and :meth:`stop` still ends publishing at once.
    """

    def __init__(
        self,
        cw: CloudWatchClient,
        asg: str,
        value: float,
        *,
        interval_s: float,
        counts: int = 1000,
    ) -> None:
        self._cw = cw
        self._asg = asg
        self.value = value
        self._interval_s = interval_s
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
            self._stop.wait(self._interval_s)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        """Stop publishing; returns only once no put is in flight."""
        self._stop.set()
        with self._lock:
            pass
        self._thread.join(timeout=60)

    @property
    def running(self) -> bool:
        return self._thread.is_alive()


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
) -> ScalingResult:
    """Drive desiredCount up by one with high GPU utilization, then back down.

    ``on_progress(phase, desired, elapsed_s, published)`` after each poll.
    The publisher is stopped on every exit path, KeyboardInterrupt included.
    """
    initial = desired_count(ecs, cluster, service)
    pub = publisher or Publisher(cw, asg, high, interval_s=publish_interval_s)
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
            f"publishing {gpu_metric.UTILIZATION}={high:g} for {asg}. Likely causes: the GPU "
            "target-tracking policy is missing or tracks another metric/dimension (`ecs-gpu "
            'doctor`); with gpu_metric = "task-gpus" the policy also needs ECS\'s '
            f"{gpu_metric.RESERVATION_METRIC} of the cluster, written only while a task runs "
            "(doctor MET004); its alarm needs more evaluation periods than this timeout; the "
            "service is at its maximum",
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
            f"publishing {gpu_metric.UTILIZATION}={low:g}. Likely causes: the CPU policy keeps "
            "it up (scale-in needs every policy to agree), the scale-in cooldown is longer than "
            "the timeout, or scale-in is disabled on a policy",
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
