"""``verify scaling``'s test as the spec drives it, and what it says.

What the test publishes from the design (:func:`signal_inputs`, :func:`levels`,
:func:`default_publish_interval_s`), the refusals before it changes anything
(:func:`check_consent`, :func:`check_can_scale`), the likely causes when the
service does not move (:func:`drive`) and the exits after it. The test itself,
which publishes and polls, is :mod:`ecs_gpu.aws.verify_scaling`.
"""

from __future__ import annotations

from dataclasses import dataclass

from ecs_gpu.contracts import demand_metric, gpu_metric
from ecs_gpu.contracts.naming import Names
from ecs_gpu.design import Design
from ecs_gpu.design.paths import fast_path as fp
from ecs_gpu.errors import EXIT_INTERRUPTED, BadInputError, EcsGpuError, ProblemsFound


@dataclass(frozen=True)
class ScalingResult:
    initial: int
    peak: int
    final: int
    scale_out_s: float
    scale_in_s: float
    published: int


def service_not_found(cluster: str, service: str) -> ProblemsFound:
    """Exit 1: DescribeServices lists no ACTIVE service of that name."""
    return ProblemsFound(
        f"ECS service {service} in cluster {cluster} not found or not ACTIVE. "
        "Fix: deploy the spec first (`ecs-gpu deploy SPEC`)."
    )


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


@dataclass(frozen=True)
class Drive:
    """What the test publishes, in words, and the likely causes when the service does
    not rise (``no_rise``) or does not fall back (``no_fall``)."""

    published: str
    no_rise: str
    no_fall: str

    def never_rose(self, initial: int, timeout_s: float, high: float) -> str:
        """The scale-out's timeout: desiredCount never rose."""
        return (
            f"desiredCount never rose above {initial} within {timeout_s:.0f} s of "
            f"publishing {self.published} = {high:g}. Likely causes: {self.no_rise}"
        )

    def never_fell(self, initial: int, timeout_s: float, low: float) -> str:
        """The scale-in's timeout: desiredCount did not come back."""
        return (
            f"desiredCount did not return to {initial} within {timeout_s:.0f} s of "
            f"publishing {self.published} = {low:g}. Likely causes: {self.no_fall}"
        )


def drive(*, concurrency: bool, fast_path: bool, cluster: str, service: str, asg: str) -> Drive:
    """The test's words: per-task concurrency of the service with ``concurrency`` (past the
    fast path's threshold, or with ``fast_path`` False past the target), else the
    ASG's GPU utilization."""
    if concurrency:
        return Drive(
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
    return Drive(
        f"{gpu_metric.UTILIZATION} for {asg}",
        "the GPU target-tracking policy is missing or tracks another metric/dimension "
        '(`ecs-gpu doctor`); with gpu_metric = "task-gpus" the policy also needs ECS\'s '
        f"{gpu_metric.RESERVATION_METRIC} of the cluster, written only while a task runs "
        "(doctor MET004); its alarm needs more evaluation periods than this timeout; the "
        "service is at its maximum",
        "the CPU policy keeps it up (scale-in needs every policy to agree), the scale-in "
        "cooldown is longer than the timeout, or scale-in is disabled on a policy",
    )


# --- what the test drives, from the spec ------------------------------------------


def signal_inputs(design: Design) -> tuple[float | None, fp.FastPath | None]:
    """The concurrency target (None on a GPU signal) and the fast path (None when off)."""
    # The signal picks the series; the design has no fast path when [scaling] turns it off.
    by_concurrency = design.signals.tracks_concurrency
    target = design.spec.scaling.target_concurrency_per_task if by_concurrency else None
    fast = design.fast_path if target is not None else None
    return target, fast


def default_publish_interval_s(target: float | None) -> float:
    """30 s for a GPU signal; for concurrency, the sidecars' own interval."""
    return 30.0 if target is None else float(demand_metric.PUBLISH_INTERVAL_S)


def levels(fast: fp.FastPath | None, target: float | None) -> dict[str, float]:
    """The high and low the test publishes (empty: its GPU defaults)."""
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
