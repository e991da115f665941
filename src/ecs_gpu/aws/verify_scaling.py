"""Prove the scaling loop moves: ``verify scaling``'s test and what it drives.

The reference module's scaling test made safe: it publishes synthetic GPU
utilization for the ASG, or synthetic per-task concurrency for the service
(weighted with ``Counts`` so the real samples do not dilute it), watches
desiredCount rise and fall, and always stops publishing on the way out.
With a fast path in the spec it first checks that the service has it (a
step policy and its alarm, :mod:`ecs_gpu.aws.verify_step_paths`), and
afterwards reads which policy made the first scale-out decision
(:mod:`ecs_gpu.aws.verify_decision`); the fast scale-in's check and verdict
are :mod:`ecs_gpu.aws.verify_scale_in`. The CLI renders; every decision is
here.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from botocore import exceptions as bx

from ecs_gpu.aws.errors import error_code, mapped, translate
from ecs_gpu.contracts import demand_metric, gpu_metric
from ecs_gpu.contracts.naming import Names
from ecs_gpu.contracts.signals import SignalPlan
from ecs_gpu.design.paths import fast_path as fp
from ecs_gpu.errors import EXIT_INTERRUPTED, BadInputError, EcsGpuError, ProblemsFound
from ecs_gpu.spec import Spec

if TYPE_CHECKING:
    from mypy_boto3_application_autoscaling import ApplicationAutoScalingClient
    from mypy_boto3_cloudwatch import CloudWatchClient
    from mypy_boto3_ecs import ECSClient


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
        raise ProblemsFound(
            f"ECS service {service} in cluster {cluster} not found or not ACTIVE. "
            "Fix: deploy the spec first (`ecs-gpu deploy SPEC`)."
        )
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
    what = _drives_and_causes(cluster, service, asg, concurrency=concurrency, fast_path=fast_path)
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


def _drives_and_causes(
    cluster: str, service: str, asg: str, *, concurrency: bool, fast_path: bool
) -> tuple[str, str, str]:
    """The series the test drives, and the likely causes of a scale-out and of a
    scale-in that never came."""
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
    return what


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


# --- what the test drives, from the spec ------------------------------------------


def signal_inputs(spec: Spec) -> tuple[float | None, fp.FastPath | None]:
    """The concurrency target (None on a GPU signal) and the fast path (None when off)."""
    # The signal picks the series; fast_path() is None when [scaling] turns it off.
    by_concurrency = SignalPlan.of(spec.scaling).tracks_concurrency
    target = spec.scaling.target_concurrency_per_task if by_concurrency else None
    fast = fp.fast_path(spec) if target is not None else None
    return target, fast


def default_publish_interval_s(target: float | None) -> float:
    """30 s for a GPU signal; for concurrency, the sidecars' own interval."""
    return 30.0 if target is None else float(demand_metric.PUBLISH_INTERVAL_S)


def levels(fast: fp.FastPath | None, target: float | None) -> dict[str, float]:
    """The high and low :func:`run_scaling_test` publishes (empty: its GPU defaults)."""
    if fast is not None:
        high, low = fp.verify_levels(fast)
    elif target is not None:
        # Without the fast path target tracking decides.
        high, low = demand_metric.verify_levels(target)
    else:
        return {}
    return {"high": high, "low": low}


# --- before, and after, the test --------------------------------------------------


def check_consent(yes: bool, names: Names, *, concurrency: bool) -> None:
    """Refuse (exit 2) without --yes: the test changes the live service's task count."""
    if yes:
        return
    signal = (
        f"{demand_metric.METRIC_NAME} for service {names.service}"
        if concurrency
        else f"{gpu_metric.UTILIZATION} for {names.asg}"
    )
    raise BadInputError(
        "verify scaling changes the live service's task count: it publishes a high "
        f"synthetic {signal} until the service scales out "
        "by one task (possibly launching a GPU instance you pay for), then a low one until "
        "it scales back in. Fix: rerun with --yes to go ahead."
    )


def check_scalable(ecs: ECSClient, appscaling: ApplicationAutoScalingClient, names: Names) -> int:
    """The service's desiredCount now, refused (exit 1) when its bounds leave no room."""
    initial = desired_count(ecs, names.cluster, names.service)
    check_can_scale(
        scaling_bounds(appscaling, names.scalable_target_resource_id),
        names.scalable_target_resource_id,
        initial,
    )
    return initial


def interrupted(*, concurrency: bool) -> EcsGpuError:
    """Ctrl-C during the test: publishing stopped; the service finds its own way back."""
    return EcsGpuError(
        "interrupted: stopped publishing the synthetic "
        + ("concurrency" if concurrency else "GPU")
        + " metric. If the service scaled out, its own autoscaling returns it after "
        "the scale-in cooldown.",
        exit_code=EXIT_INTERRUPTED,
    )


def missing_fast_path(missing: str) -> ProblemsFound:
    """Exit 1 after a test that passed without the spec's fast path."""
    # Like a missing series in verify metrics: the deployment lacks what the spec asks.
    return ProblemsFound(
        f"{missing}. Fix: redeploy the spec (`ecs-gpu diff SPEC` lists what changes, "
        "`ecs-gpu deploy SPEC` applies it; `ecs-gpu doctor SPEC` reports the scaling "
        "policies), then rerun verify scaling."
    )
