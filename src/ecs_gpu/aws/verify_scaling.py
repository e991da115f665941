"""Prove the scaling loop moves: ``verify scaling``'s test.

The reference module's scaling test made safe: it publishes synthetic GPU
utilization for the ASG, or synthetic per-task concurrency for the service
(weighted with ``Counts`` so the real samples do not dilute it), watches
desiredCount rise and fall, and always stops publishing on the way out.
With a fast path in the spec it first checks that the service has it (a
step policy and its alarm, :mod:`ecs_gpu.aws.verify_step_paths`), and
afterwards reads which policy made the first scale-out decision
(:mod:`ecs_gpu.aws.verify_decision`); the fast scale-in's reads are
:mod:`ecs_gpu.aws.verify_scale_in`. What the test drives from the spec, and
every verdict and sentence, are :mod:`ecs_gpu.checks.verify.scaling`'s; the CLI
renders.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Protocol

from botocore import exceptions as bx

from ecs_gpu.aws.errors import error_code, mapped, translate
from ecs_gpu.checks.verify.scaling import (
    ScalingResult,
    check_can_scale,
    drive,
    service_not_found,
)
from ecs_gpu.contracts import demand_metric, gpu_metric
from ecs_gpu.contracts.naming import Names
from ecs_gpu.errors import ProblemsFound

if TYPE_CHECKING:
    from mypy_boto3_application_autoscaling import ApplicationAutoScalingClient
    from mypy_boto3_cloudwatch import CloudWatchClient
    from mypy_boto3_ecs import ECSClient


# --- verify scaling ---------------------------------------------------------------


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
    return int(describe_service(ecs, cluster, service)["desiredCount"])


def describe_service(ecs: ECSClient, cluster: str, service: str) -> Mapping[str, Any]:
    """The ACTIVE service as DescribeServices lists it; exit 1 when it is not there."""
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
        raise service_not_found(cluster, service)
    return services[0]


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
    words = drive(
        concurrency=concurrency, fast_path=fast_path, cluster=cluster, service=service, asg=asg
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
            words.never_rose(initial, scale_out_timeout_s, high),
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
            words.never_fell(initial, scale_in_timeout_s, low),
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


# --- before the test ---------------------------------------------------------------


def check_scalable(ecs: ECSClient, appscaling: ApplicationAutoScalingClient, names: Names) -> int:
    """The service's desiredCount now, refused (exit 1) when its bounds leave no room."""
    initial = desired_count(ecs, names.cluster, names.service)
    check_can_scale(
        scaling_bounds(appscaling, names.scalable_target_resource_id),
        names.scalable_target_resource_id,
        initial,
    )
    return initial
