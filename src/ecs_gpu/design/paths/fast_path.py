"""The fast path: a step-scaling policy on a 10-second alarm over per-task concurrency.

Target tracking on a custom metric evaluates one-minute datapoints and waits
for 3 of them (aws-semantics.md §1), so a load step reaches the task count
after about four minutes. Knative answers the same problem with a "panic"
mode: when the short-window concurrency passes a multiple of the target it
sizes the fleet to that concurrency at once, and never scales in while
panicking. Here the short window is a high-resolution CloudWatch alarm and
the sizing is a StepScaling policy whose steps add the capacity the excess
calls for. Scale-in stays with target tracking (and the optional fast
scale-in): every step adds. With the fast path on it is the only scale-out:
target tracking's datapoint is capped at the target (``TRACKING_CAP_RATIO``).

The template (infra/scaling.py) writes these numbers and the simulator runs
them, so they are computed here once, without importing CDK.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final, Literal

from ecs_gpu.contracts import demand_metric
from ecs_gpu.contracts.signals import SignalPlan
from ecs_gpu.design import managed_scaling
from ecs_gpu.spec import Spec

# CloudWatch alarm periods: 10, 20, 30 or a multiple of 60 s; below 60 they
# need a metric stored at StorageResolution 1 (botocore cloudwatch
# PutMetricAlarm.Period). The concurrency series is published every 10 s at
# high resolution (demand_metric.py), so a 10-s period sees every datapoint.
ALARM_PERIOD_S: Final = demand_metric.ALARM_PERIOD_S
STATISTIC: Final = demand_metric.STATISTIC
# Two breaching 10-s datapoints in a row: one noisy window (a single burst
# of long prompts) does not launch GPU instances, and a real step is caught
# within (2 + 1) x 10 s = 30 s: up to one period for the step to show in a
# published sample, then two full breaching periods.
EVALUATION_PERIODS: Final = 2
DATAPOINTS_TO_ALARM: Final = 2
# The alarm compares with GreaterThanOrEqualToThreshold: the step bounds
# below are measured from the threshold, lower bound inclusive.
COMPARISON: Final = "GreaterThanOrEqualToThreshold"
# Application Auto Scaling reduces the alarm's datapoints with this before
# picking a step: the largest excess in the window picks the step. Minimum
# (the excess both datapoints reached) would size a 20-s burst smaller, at the
# cost of more loads over the overload bound (docs/benchmarks.md "The
# scale-out frontier").
Aggregation = Literal["Maximum", "Minimum", "Average"]
METRIC_AGGREGATION: Final[Aggregation] = "Maximum"
ADJUSTMENT_TYPE: Final = "PercentChangeInCapacity"
# A percentage of one or two tasks rounds to less than a task; at least one
# task is always added (StepScalingPolicyConfiguration.MinAdjustmentMagnitude).
MIN_ADJUSTMENT_MAGNITUDE: Final = 1
# Where each step starts, as a fraction of the threshold by which per-task
# concurrency exceeds it: 0-10 % over, 10-25 %, 25-50 %, 50-75 %, 75-100 %,
# 100-150 %, 150-200 %, 200-300 %, 300 % and more. Each step adds what its
# lower edge needs, so the finer the table the less a step over-adds: with the
# fast path doing every scale-out (target tracking's datapoint is capped at the
# target, ``TRACKING_CAP_RATIO``) three coarse steps leave the fleet up to 50 %
# short or over (docs/benchmarks.md "Pay for what you serve: the concurrency
# designs on every load").
STEP_STARTS: Final = (0.0, 0.1, 0.25, 0.5, 0.75, 1.0, 1.5, 2.0, 3.0)
# With the fast path on, target tracking on the concurrency series reads
# ``MIN(datapoint, target x this)`` (metric math in the template, the same cap
# in the simulator): 1.0, so target tracking never scales out and keeps only
# its scale-in. Its scale-out multiplies the RUNNING count at its decision by
# a datapoint of a minute ago (aws-semantics §1 "Base for the computation"):
# once the fast path has started tasks for a step in load, that product counts
# the step twice and drives the fleet toward max_tasks (docs/benchmarks.md
# "Pay for what you serve: the concurrency designs on every load"). The fast
# path sizes from the running count at its invocation and its cooldown counts
# what it already added, so it is the one path that scales out.
TRACKING_CAP_RATIO: Final = 1.0
# The latest a step in load is acted on, from the step to the alarm.
MAX_DETECTION_S: Final = (DATAPOINTS_TO_ALARM + 1) * ALARM_PERIOD_S


@dataclass(frozen=True)
class Step:
    """One StepAdjustment: ``lower <= concurrency - threshold < upper`` adds ``percent`` %."""

    lower: float
    upper: float | None  # None: no upper bound
    percent: int


@dataclass(frozen=True)
class FastPath:
    """The alarm and step policy a spec deploys (None from :func:`fast_path` when off)."""

    target: float  # target_concurrency_per_task
    threshold: float  # per-task concurrency at which the alarm breaches
    steps: tuple[Step, ...]
    cooldown_s: int
    period_s: int = ALARM_PERIOD_S
    evaluation_periods: int = EVALUATION_PERIODS
    datapoints_to_alarm: int = DATAPOINTS_TO_ALARM
    min_adjustment: int = MIN_ADJUSTMENT_MAGNITUDE
    # MetricAggregationType; another only in the benchmarks' frontier.
    aggregation: Aggregation = METRIC_AGGREGATION

    def step_for(self, concurrency: float) -> Step | None:
        """The step the policy takes at this per-task concurrency, or None below the threshold."""
        excess = concurrency - self.threshold
        if not excess >= 0:
            return None
        for step in self.steps:
            if step.lower <= excess and (step.upper is None or excess < step.upper):
                return step
        return None  # unreachable: the last step has no upper bound

    def tasks_to_add(self, concurrency: float, current_tasks: int) -> int:
        """Tasks one invocation adds at this per-task concurrency and current task count.

        ``current_tasks x percent / 100``, rounded down, never below
        :data:`MIN_ADJUSTMENT_MAGNITUDE`. Application Auto Scaling documents
        only the minimum; rounding down is EC2 Auto Scaling's documented rule
        for PercentChangeInCapacity, taken as the same (a named assumption).
        The caller clamps the result to max_tasks and applies the cooldown.
        """
        step = self.step_for(concurrency)
        if step is None:
            return 0
        return max(self.min_adjustment, current_tasks * step.percent // 100)


def threshold(spec: Spec) -> float:
    """Per-task concurrency at which the fast path fires: panic_threshold_percent of the target."""
    target = _target(spec)
    return target * spec.scaling.panic_threshold_percent / 100


def steps(spec: Spec, starts: tuple[float, ...] = STEP_STARTS) -> tuple[Step, ...]:
    """The step table: each step adds what its lower edge needs to bring concurrency to the target.

    At per-task concurrency ``c`` over ``n`` tasks the load needs ``n x c /
    target`` tasks (Knative's panic sizing), i.e. ``(c / target - 1) x 100``
    percent more. Each step adds that percentage for the ``c`` at its lower
    edge, so it never adds more than the load it saw needs; a larger excess
    in a later window picks a larger step (the cooldown lets a larger step
    through, aws-semantics.md §1 "Scale-out cooldown semantics").
    ``starts``: another table's step starts (the benchmarks' in-flight
    concurrency design runs three coarse steps, (0, 0.5, 1)).
    """
    thr = threshold(spec)
    target = _target(spec)
    out = []
    for i, start in enumerate(starts):
        end = starts[i + 1] if i + 1 < len(starts) else None
        edge = thr * (1 + start)
        percent = math.floor((edge / target - 1) * 100 + 1e-9)
        out.append(
            Step(
                lower=round(start * thr, 6),
                upper=None if end is None else round(end * thr, 6),
                percent=max(1, percent),
            )
        )
    return tuple(out)


def tracking_cap(spec: Spec) -> float | None:
    """The cap on target tracking's concurrency datapoint, or None (uncapped: no fast path)."""
    if not SignalPlan.of(spec.scaling).fast_path:
        return None
    return round(_target(spec) * TRACKING_CAP_RATIO, 6)


def cooldown_s(spec: Spec) -> int:
    """Seconds before the same step may add tasks again: a new task's time to serve.

    Added tasks lower per-task concurrency only once they serve, and on a GPU
    fleet a new task usually waits for a new instance: managed scaling's
    launch datapoint (managed_scaling.LAUNCH_DATAPOINT_S), then the capacity
    provider's instance warm-up (managed_scaling.instance_warmup_s), boot +
    image pull + model, or with a warm pool that covers the fleet a warm
    start + model. Until then the alarm still sees the old excess; a larger
    step is not held back (cooldown semantics above). A cooldown of the
    warm-up alone would end while the added tasks still load, and the next
    invocation would multiply the running count, those tasks included, by the
    old excess: the fleet overshoots what the load needs (docs/benchmarks.md
    "Pay for what you serve: the concurrency designs on every load").
    """
    return managed_scaling.instance_warmup_s(spec) + managed_scaling.LAUNCH_DATAPOINT_S


def fast_path(spec: Spec) -> FastPath | None:
    """The fast path of a spec, or None when ``[scaling]`` leaves it off."""
    if not SignalPlan.of(spec.scaling).fast_path:
        return None
    return FastPath(
        target=_target(spec),
        threshold=threshold(spec),
        steps=steps(spec),
        cooldown_s=cooldown_s(spec),
    )


def verify_levels(fast: FastPath) -> tuple[float, float]:
    """The high and low concurrency ``verify scaling`` publishes to prove the fast path.

    High is the middle of the first step: the alarm breaches and the smallest
    step fires. Low is 0, below the target.
    """
    first = fast.steps[0]
    upper = first.upper if first.upper is not None else fast.threshold
    return fast.threshold + upper / 2, 0.0


def _target(spec: Spec) -> float:
    target = spec.scaling.target_concurrency_per_task
    if target is None:
        # The spec rules require it with the concurrency signal, and the fast
        # path exists only with that signal.
        raise ValueError("the fast path needs [scaling] target_concurrency_per_task")
    return target


def alarm_differences(
    alarm: Mapping[str, Any], cluster: str, service: str, threshold: float | None
) -> list[tuple[str, Any, str]]:
    """(field, value found, phrase) for each way a deployed alarm differs from the fast
    path's: the sidecars' series, :data:`STATISTIC`, :data:`ALARM_PERIOD_S` and, when
    known, ``threshold`` (empty: it is the fast path's alarm). doctor and verify read it."""
    if alarm.get("Metrics"):
        return [("Metrics", alarm["Metrics"], "a metric-math expression (want one series)")]
    out = demand_metric.series_differences(alarm, alarm.get("Statistic"), cluster, service)
    period = alarm.get("Period")
    if period != ALARM_PERIOD_S:
        out.append(("Period", period, f"period {period} s (want {ALARM_PERIOD_S} s)"))
    found = alarm.get("Threshold")
    if threshold is not None and not (
        isinstance(found, int | float) and math.isclose(found, threshold, abs_tol=1e-9)
    ):
        shown = f"{found:g}" if isinstance(found, int | float) else "none"
        out.append(("Threshold", found, f"threshold {shown} (want {threshold:g})"))
    return out


def policy_differences(
    policy: Mapping[str, Any], cooldown: int | None
) -> list[tuple[str, Any, str]]:
    """(field, value found, phrase) for each way a deployed fast-path policy differs from
    the template's: its adjustment type, aggregation and, when the spec is known
    (``cooldown``: :func:`cooldown_s`), its cooldown. A cooldown shorter than a new
    task's time to serve (a stack deployed before it counted managed scaling's launch
    datapoint) lets the next invocation multiply tasks still starting by an excess they
    have not answered. doctor's fast-path check reads it."""
    cfg = policy.get("StepScalingPolicyConfiguration") or {}
    out: list[tuple[str, Any, str]] = []
    for field, want in (
        ("AdjustmentType", ADJUSTMENT_TYPE),
        ("MetricAggregationType", METRIC_AGGREGATION),
        ("Cooldown", cooldown),
    ):
        got = cfg.get(field)
        if want is not None and got != want:
            out.append(
                (f"StepScalingPolicyConfiguration.{field}", got, f"{field} {got} (want {want})")
            )
    return out
