"""The service layer: Application Auto Scaling target tracking on the service's desired count.

One policy per tracked signal (GPU on the series [scaling] gpu_metric names,
concurrency on the sidecars', requests on the load balancer's) and CPU on
the service average, combined "out if any, in only if all", each scale-in
held by the documented scale-in guard. :class:`ServiceLayer` also owns the
desired count and the scalable target's bounds that the other service-side
controllers (the step paths, the schedule) change.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass

from ecs_gpu.sim import params as P
from ecs_gpu.sim.controllers.base import (
    Context,
    Controller,
    Vote,
    apply_desired,
    breaching_high,
    breaching_low,
)
from ecs_gpu.sim.fleet import Fleet
from ecs_gpu.sim.metrics import MetricSeries
from ecs_gpu.sim.params import SimParams


def scale_in_capacity(base: int, metric: float, target: float) -> int:
    """Capacity after a scale-in from ``base`` units at ``metric``: the scale-in guard.

    Target tracking does not scale in if removing capacity would likely push
    the metric above the target, and its rounding never removes too much
    (aws-semantics §1 "Scale-in guard", "Rounding";
    https://docs.aws.amazon.com/autoscaling/application/userguide/target-tracking-scaling-policy-overview.html,
    https://docs.aws.amazon.com/AmazonECS/latest/developerguide/service-autoscaling-targettracking.html).
    A unit comes off only while the same load on one unit fewer reads at or
    below the target: the fewest units c with base x metric / c <= target.
    Never more than ``base``; 0 only when the metric is 0.
    """
    return min(base, max(0, math.ceil(base * metric / target - 1e-9)))


def target_tracking_vote(
    history: deque[float | None],
    target: float,
    base: int,
    high_n: int = P.TT_HIGH_DATAPOINTS,
    low_n: int = P.TT_LOW_DATAPOINTS,
    low_fraction: float = P.TT_LOW_FRACTION,
    scale_in_basis: P.ScaleInBasis = "window-max",
) -> Vote:
    """One target-tracking policy: its two alarms and the capacity it computes.

    The capacity formula is not published (aws-semantics §1 [gap]); we use the
    standard proportional model ``ceil(base x metric / target)``. Scale-out
    reads the latest datapoint; scale-in reads ``scale_in_basis`` (see
    TargetTracking.scale_in_basis): the AlarmLow window's highest datapoint,
    or the latest.
    """
    high = breaching_high(history, high_n, target)
    low = not high and breaching_low(history, low_n, target * low_fraction)
    m = history[-1] if history else None
    if m is None or not (high or low):
        return Vote(high, low, base)
    if high:
        return Vote(high, low, math.ceil(base * m / target - 1e-9))
    if scale_in_basis == "window-max":
        # AlarmLow just checked these low_n datapoints: all exist.
        m = max(v for v in list(history)[-low_n:] if v is not None)
    return Vote(high, low, scale_in_capacity(base, m, target))


@dataclass(slots=True)
class ServiceScaler:
    """Application Auto Scaling on ecs:service:DesiredCount (aws-semantics §1).

    No scale-out cooldown field: its rule is "no further increase unless a
    larger scale-out is computed" (§1), and since every computation starts
    from the RUNNING count, a proposal adds capacity only when it exceeds the
    desired count already set, which :meth:`decide` applies to every proposal.
    So the scale-out cooldown cannot change a decision in this model
    (docs/simulator.md).
    """

    min_tasks: int
    max_tasks: int
    scale_in_cooldown_s: float
    last_scale_in: float = -math.inf

    def decide(self, t: float, votes: list[Vote], desired: int, hold_in: bool = False) -> int:
        """New desired count from this minute's policy votes.

        Called every minute: an alarm in ALARM re-invokes its policy every
        minute (AlarmThatSendsEmail.md, aws-semantics §1), so this is the same.
        """
        outs = [v.proposal for v in votes if v.high]
        if outs:
            want = min(max(max(outs), self.min_tasks), self.max_tasks)
            if want > desired:
                # A scale-out cancels the scale-in cooldown (§1).
                self.last_scale_in = -math.inf
                return want
            return desired
        # Scale in only if every policy (all have scale-in enabled) says so;
        # the largest resulting capacity wins (§1 "Multiple TT policies").
        if votes and all(v.low for v in votes) and not hold_in:
            if t < self.last_scale_in + self.scale_in_cooldown_s:
                return desired
            want = min(max(max(v.proposal for v in votes), self.min_tasks), self.max_tasks)
            if want < desired:
                self.last_scale_in = t
                return want
        return desired


class ServiceLayer(Controller):
    """The service's target-tracking policies, applied to the fleet once a minute.

    Policies: one per tracked signal, each a (series, target) pair the
    engine builds with the signal's pipeline (concurrency, then GPU: the
    template's order), and CPU, each on its own series. Nothing here names
    a signal, so a new one adds a pair, not a branch.
    """

    __slots__ = ("_basis", "_cpu_scale_in", "_policies", "desired", "scaler")

    def __init__(
        self,
        p: SimParams,
        desired: int,
        tracked: Sequence[tuple[MetricSeries, float]],
        cpu: MetricSeries,
    ) -> None:
        tt = p.tracking
        self.scaler = ServiceScaler(p.min_tasks, p.max_tasks, tt.scale_in_cooldown_s)
        self.desired = desired
        self._basis = tt.scale_in_basis
        self._policies = (*tracked, (cpu, tt.cpu_target_percent))
        self._cpu_scale_in = tt.cpu_scale_in

    def on_minute(self, t: float, ctx: Context) -> None:
        """Vote on this minute's datapoints, set the desired count, start or stop tasks.

        ``ctx.hold_in``: another policy (the fast path's step policy, its alarm
        in ALARM) holds the capacity it set, and when policies fire together
        the largest capacity wins (aws-semantics §1 "Multiple TT policies"),
        so no scale-in this minute.
        """
        fleet = ctx.fleet
        base = fleet.running
        basis = self._basis
        votes = [
            target_tracking_vote(series.history, target, base, scale_in_basis=basis)
            for series, target in self._policies
        ]
        if not self._cpu_scale_in and not votes[-1].high:
            # DisableScaleIn: the CPU policy (last) leaves the scale-in vote
            # (aws-semantics §9), i.e. it never holds the others' scale-in.
            votes[-1] = Vote(False, True, 0)
        self.desired = desired = self.scaler.decide(t, votes, self.desired, ctx.hold_in)
        apply_desired(t, fleet, desired)

    def set_desired(self, t: float, fleet: Fleet, want: int) -> None:
        """Another policy set the desired count: ECS starts or stops tasks to match."""
        if want != self.desired:
            self.desired = want
            apply_desired(t, fleet, want)
