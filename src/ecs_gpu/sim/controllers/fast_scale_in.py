"""The fast scale-in: a 10-second low alarm and a step policy that removes a bounded part."""

from __future__ import annotations

import math
from collections import deque
from typing import Any

from ecs_gpu.design.paths.fast_scale_in import FastScaleIn
from ecs_gpu.sim import params as P
from ecs_gpu.sim.controllers.base import Context, Controller, Service, largest_capacity
from ecs_gpu.sim.fleet import Fleet
from ecs_gpu.sim.metrics import MetricSeries


class FastScaleInLayer(Controller):
    """The fast scale-in: a 10-second low alarm and a step policy that removes a bounded part.

    The alarm is in ALARM while the last ``evaluation_periods`` datapoints of
    its expression (per-task concurrency with one task fewer, the
    DemandPipeline's ``scale_in`` series) all exist and are below the
    threshold (ecs_gpu.design.paths.fast_scale_in); a missing datapoint is not breaching.
    It invokes the policy when it enters ALARM, then once a minute while it
    stays (params.ALARM_REINVOKE_S). The policy reads the Maximum of the
    window, removes its step's percentage of the RUNNING count (at least one
    task, rounded toward zero; aws-semantics §1 "Base for the computation")
    and blocks later scale-ins for its cooldown; a scale-out by another
    policy is never blocked by it (§9 "Step policy cooldown, scale-in").
    Target tracking does not block it either (§9 "A step scale-in while
    target tracking is not ready"): the engine only lets a larger capacity
    fired at the same instant win (:func:`largest_capacity`).
    """

    __slots__ = (
        "_before",
        "_fsi",
        "_min_tasks",
        "_shared_cooldown",
        "actions",
        "in_alarm",
        "last_action",
        "last_invoke",
        "series",
    )

    def __init__(
        self,
        fsi: FastScaleIn,
        min_tasks: int,
        series: MetricSeries | None = None,
        *,
        shared_cooldown: bool = False,
    ) -> None:
        self._fsi = fsi
        self._min_tasks = min_tasks
        # The alarm's expression (DemandPipeline.scale_in).
        self.series = MetricSeries(window=fsi.evaluation_periods) if series is None else series
        # TargetTracking.shared_scale_in_cooldown: target tracking's scale-in
        # cooldown holds this policy, and its scale-in starts target tracking's.
        self._shared_cooldown = shared_cooldown
        self.in_alarm = False
        self.last_invoke = -math.inf
        self.last_action = -math.inf
        self.actions = 0
        # The desired count before this instant's policies.
        self._before = 0

    def on_step_start(self, t: float, ctx: Context) -> None:
        # Before any policy of this instant: one that changes the count fired now
        # (target tracking at a minute, the fast path).
        self._before = ctx.service.desired

    def on_step(self, t: float, ctx: Context) -> None:
        self.evaluate(t, ctx.fleet, ctx.service, self._before)

    def summary(self, ctx: Context) -> dict[str, Any]:
        return {"fast_scale_ins": self.actions}

    def evaluate(self, t: float, fleet: Fleet, service: Service, before: int) -> None:
        """The 10-second evaluation, beside what fired at the same instant.

        Target tracking does not block it (aws-semantics §9); a policy that
        fired at the same instant (target tracking at the minute, the fast
        path) is combined with it by :func:`largest_capacity`. With the
        shared cooldown (the [gap] of §9) target tracking's scale-in cooldown
        also holds it, and its scale-in starts target tracking's.
        """
        self.series.visible(t)
        scaler = service.scaler
        shared = self._shared_cooldown
        if shared and t < scaler.last_scale_in + scaler.scale_in_cooldown_s:
            return
        want = self.proposal(t, fleet.running, before, self.series.history)
        if want is None:
            return
        # A scheduled action may have raised the minimum above the spec's.
        want = max(want, min(before, scaler.min_tasks))
        others = [service.desired] if service.desired != before else []
        if largest_capacity([want, *others]) != want:
            return  # a larger capacity fired at the same instant
        self.took(t)
        if shared:
            scaler.last_scale_in = t
        service.set_desired(t, fleet, want)

    def alarm_value(self, history: deque[float | None]) -> float | None:
        """The Maximum of the evaluated datapoints when all breach, else None."""
        fsi = self._fsi
        n = fsi.evaluation_periods
        if len(history) < n:
            return None
        window = list(history)[-n:]
        low = [v for v in window if v is not None and v < fsi.threshold]
        if len(low) < fsi.datapoints_to_alarm:
            return None
        return max(low)

    def proposal(
        self, t: float, running: int, desired: int, history: deque[float | None]
    ) -> int | None:
        """The capacity this step's invocation sets, or None when it sets none.

        None: the alarm is not in ALARM, it already invoked within the minute,
        the cooldown holds it, or the cut would not lower ``desired``.
        """
        value = self.alarm_value(history)
        if value is None:
            self.in_alarm = False
            return None
        if self.in_alarm and t < self.last_invoke + P.ALARM_REINVOKE_S:
            return None
        self.in_alarm = True
        self.last_invoke = t
        if t < self.last_action + self._fsi.cooldown_s:
            return None
        new = max(running - self._fsi.tasks_to_remove(value, running), self._min_tasks)
        return new if new < desired else None

    def took(self, t: float) -> None:
        """The proposal was applied: the cooldown starts."""
        self.last_action = t
        self.actions += 1
