"""The fast scale-in: a step-scaling policy on a 10-second low alarm over per-task concurrency.

Target tracking scales in only after its AWS-owned low alarm sees 15
one-minute datapoints below about 0.9 x the target, and that alarm cannot be
changed (aws-semantics.md §9 "Target tracking's low alarm"), so after a load
drop the service holds its task count for 15 minutes at least. This is the
fast path's twin on the way down: a step policy on an alarm we own, on the
sidecars' 10-second series (demand_metric.py), beside target tracking (§9
"Step and target tracking on one scalable target"), which keeps its own
scale-in as the 15-minute backstop. Nothing in AWS protects capacity from a
step scale-in (§9), so the guard is in the alarm and the steps: see
:data:`THRESHOLD_FRACTION`, :data:`STEP_STARTS` and docs/template.md "Fast
scale-in". The template (infra/scaling.py) writes these numbers and the
simulator runs them, so they are computed here once, without importing CDK.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from ecs_gpu.contracts import demand_metric
from ecs_gpu.contracts.signals import SignalPlan
from ecs_gpu.spec import Spec

# 10-s periods need the series at StorageResolution 1, which the sidecar
# writes (aws-semantics.md §9 "High-resolution alarm for a step policy").
ALARM_PERIOD_S: Final = demand_metric.ALARM_PERIOD_S
# Two minutes low in a row: a lull between requests (a few quiet 10-s
# windows) removes nothing, and a real drop is acted on within about
# (12 + 1) x 10 s, against target tracking's 15 minutes.
EVALUATION_PERIODS: Final = 12
DATAPOINTS_TO_ALARM: Final = 12
COMPARISON: Final = "LessThanThreshold"
# The alarm reads ``s / (n - 1)`` (:func:`expression`): the tasks' summed
# concurrency over one task fewer, the per-task concurrency *after* removing
# one task (with one task it reads the target: never low). It breaches while
# that is below the target itself: target tracking's scale-in guard ("no
# scale-in if removing one capacity unit would likely push the metric above
# the target", aws-semantics §1), checked on 12 ten-second datapoints instead
# of after 15 one-minute ones, so the fleet settles at the tasks the load
# needs at the target, not at 1 / 0.9 of them plus one. The hysteresis
# against target tracking's scale-out (3 minutes above the target) is the
# 2-minute window and the Maximum below. The fast path breaches at
# ``panic_threshold_percent`` (>= 110 %) of the target on the plain per-task
# value, which is never above this expression's, so both alarms never hold on
# the same datapoints; and the tasks the fast path adds are sized for the load
# at the target (they count as RUNNING while they load, and the backlog grows
# meanwhile), so removing one of them reads above the target: the alarm does
# not fire on them while the load lasts.
THRESHOLD_FRACTION: Final = 1.0
# Application Auto Scaling reduces the alarm's datapoints with this before
# picking a step: the highest per-task value in the window, the smallest cut.
METRIC_AGGREGATION: Final = "Maximum"
ADJUSTMENT_TYPE: Final = "PercentChangeInCapacity"
# A percentage of a few tasks rounds to no task; one task is always removed
# (StepScalingPolicyConfiguration.MinAdjustmentMagnitude). Safe: the alarm's
# value is the per-task load with one task fewer, below the target.
MIN_ADJUSTMENT_MAGNITUDE: Final = 1
# At most a quarter of the tasks per step: a wrong reading costs a quarter.
MAX_STEP_PERCENT: Final = 25
# Where each band starts, as a fraction of the threshold below it: 0-10 %
# below (removes one task: 1 %, at least one), 10-25 % below (removes
# 1 - 0.9 = 10 %), 25 % and more below (removes 1 - 0.75 = 25 %). The band
# just under the target removes one task, which the expression says is safe;
# from 200 tasks up its 1 % is two tasks or more, which may leave per-task
# concurrency up to 1 % over the target.
STEP_STARTS: Final = (0.0, 0.1, 0.25)
# One invocation a minute while in ALARM (aws-semantics §1 "Alarm -> policy
# invocation"), and the 12-datapoint window then holds 60 s of the smaller
# fleet minus the pipeline's few seconds: the next step reads it. 60 s.
COOLDOWN_S: Final = 60
# The metric-math query ids and expression the alarm evaluates.
SUM_ID: Final = "s"
COUNT_ID: Final = "n"
EXPRESSION_LABEL: Final = "Requests in flight or waiting per task, with one task fewer"


def samples_per_task(period_s: int = ALARM_PERIOD_S) -> int:
    """Datapoints one task's sidecar publishes in a period (one per publish interval)."""
    return max(1, period_s // demand_metric.PUBLISH_INTERVAL_S)


def expression(threshold: float, period_s: int = ALARM_PERIOD_S) -> str:
    """``s / (n - k)``: Sum over SampleCount less one task's ``k`` datapoints a period,
    i.e. the summed per-task concurrency over one task fewer; with one task (``n <= k``)
    the threshold itself, which never breaches (LessThanThreshold)."""
    k = samples_per_task(period_s)
    return f"IF({COUNT_ID} > {k}, {SUM_ID} / ({COUNT_ID} - {k}), {threshold:g})"


@dataclass(frozen=True)
class Step:
    """One StepAdjustment: ``lower < value - threshold <= upper`` removes ``percent`` %.

    Below the breach threshold AWS makes the lower bound exclusive and the upper
    inclusive ("greater than 40 and less than or equal to 50" for -10 and 0 at a
    threshold of 50: StepAdjustment, aws-semantics §9 "Step bounds below the
    threshold"); above it, as the fast path's, the other way round.
    """

    lower: float | None  # None: no lower bound
    upper: float
    percent: int  # positive: the percentage removed


@dataclass(frozen=True)
class FastScaleIn:
    """The alarm and step policy a spec deploys (None from :func:`fast_scale_in` when off)."""

    target: float  # target_concurrency_per_task
    threshold: float  # the alarm's value below which it breaches
    steps: tuple[Step, ...]
    cooldown_s: int = COOLDOWN_S
    period_s: int = ALARM_PERIOD_S
    evaluation_periods: int = EVALUATION_PERIODS
    datapoints_to_alarm: int = DATAPOINTS_TO_ALARM
    min_adjustment: int = MIN_ADJUSTMENT_MAGNITUDE

    def step_for(self, value: float) -> Step | None:
        """The step the policy takes at this alarm value, or None at or above the threshold."""
        delta = value - self.threshold
        if not delta < 0:
            return None
        for step in self.steps:
            if (step.lower is None or step.lower < delta) and delta <= step.upper:
                return step
        return None  # unreachable: the last step has no lower bound

    def tasks_to_remove(self, value: float, current_tasks: int) -> int:
        """Tasks one invocation removes at this alarm value and current task count.

        ``current_tasks x percent / 100`` rounded down (toward zero, EC2 Auto
        Scaling's documented rule for PercentChangeInCapacity, taken as the
        same: the fast path's named assumption), never below
        :data:`MIN_ADJUSTMENT_MAGNITUDE`, never all of them. The caller
        clamps to min_tasks and applies the cooldown.
        """
        step = self.step_for(value)
        if step is None or current_tasks <= 1:
            return 0
        return min(current_tasks - 1, max(self.min_adjustment, current_tasks * step.percent // 100))


def threshold(target: float) -> float:
    """The alarm's threshold: :data:`THRESHOLD_FRACTION` of the target."""
    return round(target * THRESHOLD_FRACTION, 6)


def steps(target: float, max_percent: int = MAX_STEP_PERCENT) -> tuple[Step, ...]:
    """The step table: each band removes what its highest value leaves at the target.

    A band whose alarm values are at most ``e`` (its upper edge, inclusive below
    the threshold) has per-task concurrency at most ``e`` on one task fewer, so
    removing ``1 - e / target``
    of the tasks leaves at least what the load needs at the target; capped
    at ``max_percent`` (:data:`MAX_STEP_PERCENT`; benchmarks/stress.py
    --scale-in-frontier runs a smaller cap).
    """
    thr = threshold(target)
    out = []
    for i, start in enumerate(STEP_STARTS):
        end = STEP_STARTS[i + 1] if i + 1 < len(STEP_STARTS) else None
        edge = thr * (1 - start)
        percent = min(max_percent, math.floor((1 - edge / target) * 100 + 1e-9))
        out.append(
            Step(
                lower=None if end is None else round(-end * thr, 6),
                upper=round(-start * thr, 6) + 0.0,  # no -0.0
                percent=max(1, percent),
            )
        )
    return tuple(out)


def enabled(spec: Spec) -> bool:
    """Whether the spec deploys it: ``[scaling] fast_scale_in = true`` (the concurrency
    signal only, a spec rule).

    Off by default. It brings the time from a load drop to need down to a few
    minutes and lowers GPU-hours on nearly every trace, but with the covering
    pool it raises overload on the real traces: the instances it empties leave
    sooner, so the next rise waits for new ones, and the tasks it removes come
    back only after a model load. No setting of it keeps that overload within
    the bound (docs/benchmarks.md "Pay for what you serve: the concurrency
    designs on every load" and "The scale-in frontier"). Its alarm and policy
    also weigh on the inline template limit (docs/benchmarks.md "Template size").
    """
    sc = spec.scaling
    return sc.fast_scale_in is True and SignalPlan.of(sc).tracks_concurrency


def fast_scale_in(spec: Spec) -> FastScaleIn | None:
    """The fast scale-in of a spec, or None when ``[scaling]`` leaves it off."""
    target = spec.scaling.target_concurrency_per_task
    if not enabled(spec) or target is None:
        return None
    return FastScaleIn(target=target, threshold=threshold(target), steps=steps(target))


def is_scale_in_policy(policy: Mapping[str, Any]) -> bool:
    """Whether a deployed StepScaling policy only removes (the fast scale-in's shape)."""
    cfg = policy.get("StepScalingPolicyConfiguration") or {}
    steps = cfg.get("StepAdjustments") or []
    return bool(steps) and all(
        isinstance(s.get("ScalingAdjustment"), int | float) and s["ScalingAdjustment"] < 0
        for s in steps
    )


def alarm_differences(
    alarm: Mapping[str, Any], cluster: str, service: str, threshold: float | None
) -> list[tuple[str, Any, str]]:
    """(field, value found, phrase) for each way a deployed alarm differs from the fast
    scale-in's: metric math over the sidecars' series (its Sum and SampleCount at
    :data:`ALARM_PERIOD_S`), :data:`COMPARISON` and, when known, ``threshold`` and
    the expression (empty: it is the fast scale-in's alarm). doctor reads it."""
    queries = alarm.get("Metrics")
    if not queries:
        return [("Metrics", None, "one series (want the metric-math expression s / (n - k))")]
    out: list[tuple[str, Any, str]] = []
    stats: dict[str, Any] = {}
    for q in queries:
        ms = q.get("MetricStat")
        if not ms:
            continue
        stats[q.get("Id")] = ms.get("Stat")
        diffs = demand_metric.series_differences(
            ms.get("Metric") or {}, demand_metric.STATISTIC, cluster, service
        )
        out += [(f"Metrics.{q.get('Id')}.{f}", v, p) for f, v, p in diffs]
        period = ms.get("Period")
        if period != ALARM_PERIOD_S:
            phrase = f"period {period} s (want {ALARM_PERIOD_S} s)"
            out.append((f"Metrics.{q.get('Id')}.Period", period, phrase))
    want_stats = {SUM_ID: "Sum", COUNT_ID: "SampleCount"}
    if stats != want_stats:
        out.append(("Metrics", stats, f"statistics {stats} (want {want_stats})"))
    exprs = [
        q.get("Expression") for q in queries if q.get("ReturnData", True) and "Expression" in q
    ]
    if threshold is not None and exprs != [expression(threshold)]:
        out.append(("Expression", exprs, f"expression {exprs} (want {expression(threshold)})"))
    if alarm.get("ComparisonOperator") != COMPARISON:
        op = alarm.get("ComparisonOperator")
        out.append(("ComparisonOperator", op, f"comparison {op} (want {COMPARISON})"))
    found = alarm.get("Threshold")
    if threshold is not None and not (
        isinstance(found, int | float) and math.isclose(found, threshold, abs_tol=1e-9)
    ):
        shown = f"{found:g}" if isinstance(found, int | float) else "none"
        out.append(("Threshold", found, f"threshold {shown} (want {threshold:g})"))
    return out
