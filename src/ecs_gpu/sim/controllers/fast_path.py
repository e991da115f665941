"""The fast path: a 10-second alarm on the concurrency series and a step policy that only adds.

Beside target tracking: while its alarm is in ALARM it also holds target
tracking's scale-in (the larger capacity wins when policies fire together).
"""

from __future__ import annotations

import math
from collections import deque
from typing import Any

from ecs_gpu.design.paths.fast_path import FastPath
from ecs_gpu.sim import params as P
from ecs_gpu.sim.controllers.base import Context, Controller
from ecs_gpu.sim.fleet import Fleet
from ecs_gpu.sim.metrics import MetricSeries


class StepWindow:
    """A step policy's rule for an invocation soon after its last action.

    Application Auto Scaling's cooldown and EC2 Auto Scaling's instance
    warm-up say the same (FastPathLayer and AsgFastPath cite them): until
    ``window_s`` after an action, the capacity it added counts, so an
    invocation adds only what its step, taken from the same base, adds
    beyond what was already added; after it, the step starts from the
    current capacity.
    """

    __slots__ = ("_fp", "_window_s", "actions", "added", "base", "until")

    def __init__(self, fp: FastPath, window_s: float) -> None:
        self._fp = fp
        self._window_s = window_s
        self.until = -math.inf
        self.base = 0  # the capacity the window's first action scaled from
        self.added = 0  # what the window's actions added, from that base
        self.actions = 0

    def step(self, t: float, value: float, current: int) -> tuple[int, bool]:
        """(what this invocation adds, whether it starts from ``current``: outside the window)."""
        if t < self.until:
            return self._fp.tasks_to_add(value, self.base) - self.added, False
        self.base, self.added = current, 0
        return self._fp.tasks_to_add(value, current), True

    def took(self, t: float, add: int) -> None:
        """An action added ``add``: the window (re)starts."""
        self.added += add
        self.until = t + self._window_s
        self.actions += 1


class FastPathLayer(Controller):
    """The fast path: a high-resolution alarm and a step-scaling policy that only adds.

    The alarm is in ALARM while ``datapoints_to_alarm`` of the last
    ``evaluation_periods`` 10-second datapoints are at or above the
    threshold (ecs_gpu.design.paths.fast_path). It invokes the policy when it enters
    ALARM, then once a minute while it stays (params.ALARM_REINVOKE_S). The
    policy reads the Maximum of those datapoints, adds the step's percentage
    of the running count (at least one task; ECS scales from the running
    count, aws-semantics §1 "Base for the computation") and starts its
    cooldown. During the cooldown a later invocation adds only what its step
    adds beyond what the previous one added from its own base ("the previous
    increase ... is considered part of the current capacity"; "won't increase
    the desired capacity again unless either a larger scale out is triggered
    or the cooldown period ends": the Application Auto Scaling API reference
    of StepScalingPolicyConfiguration.Cooldown before 2024, now the user
    guide's "Cooldown period"; aws-semantics §1 "Scale-out cooldown
    semantics"). Scale-in stays with target tracking.
    """

    __slots__ = (
        "_ends_cooldown",
        "_fp",
        "_max_tasks",
        "cooldown",
        "in_alarm",
        "invoked",
        "last_invoke",
        "series",
    )

    def __init__(
        self,
        fp: FastPath,
        max_tasks: int,
        series: MetricSeries | None = None,
        *,
        ends_scale_in_cooldown: bool = False,
    ) -> None:
        self._fp = fp
        self._max_tasks = max_tasks
        # The alarm's 10-second datapoints (DemandPipeline.fast).
        self.series = MetricSeries(window=fp.evaluation_periods) if series is None else series
        # TargetTracking.fast_path_ends_scale_in_cooldown (a what-if).
        self._ends_cooldown = ends_scale_in_cooldown
        self.in_alarm = False
        self.last_invoke = -math.inf
        self.cooldown = StepWindow(fp, fp.cooldown_s)
        # The alarm's value when it invoked its actions this step, else None:
        # the instance step policy (AsgFastPath) acts on the same invocation.
        self.invoked: float | None = None

    @property
    def actions(self) -> int:
        return self.cooldown.actions

    def on_minute(self, t: float, ctx: Context) -> None:
        # The alarm's state now, not the previous step's: a step that enters
        # ALARM also holds target tracking's scale-in this minute.
        self.series.visible(t)
        ctx.hold_in = self.alarm_value(self.series.history) is not None

    def on_step(self, t: float, ctx: Context) -> None:
        # The 10-second alarm evaluates every period, between the minutes.
        series = self.series
        series.visible(t)
        service = ctx.service
        desired = service.desired
        want = self.decide(t, ctx.fleet, desired, series.history)
        # A scheduled action may have lowered the maximum below the spec's.
        want = min(want, max(desired, service.scaler.max_tasks))
        if want != desired:
            if want > desired and self._ends_cooldown:
                service.scaler.last_scale_in = -math.inf
            service.set_desired(t, ctx.fleet, want)

    def summary(self, ctx: Context) -> dict[str, Any]:
        return {"fast_path_scale_outs": self.actions}

    def alarm_value(self, history: deque[float | None]) -> float | None:
        """The evaluated datapoints, reduced by the policy's aggregation, when the alarm breaches.

        None when it does not. Maximum (the template's) is the largest
        breaching datapoint; Minimum and Average reduce every datapoint in
        the window.
        """
        fp = self._fp
        window = [v for v in list(history)[-fp.evaluation_periods :] if v is not None]
        if sum(v >= fp.threshold for v in window) < fp.datapoints_to_alarm:
            return None
        if fp.aggregation == "Minimum":
            return min(window)
        if fp.aggregation == "Average":
            return sum(window) / len(window)
        return max(window)

    def decide(self, t: float, fleet: Fleet, desired: int, history: deque[float | None]) -> int:
        """The desired count after this step's alarm evaluation (never lower)."""
        self.invoked = None
        value = self.alarm_value(history)
        if value is None:
            self.in_alarm = False
            return desired
        if self.in_alarm and t < self.last_invoke + P.ALARM_REINVOKE_S:
            return desired
        self.in_alarm = True
        self.last_invoke = t
        self.invoked = value
        running = fleet.running
        add, fresh = self.cooldown.step(t, value, running)
        # In the cooldown the earlier tasks are part of the capacity: only
        # what a larger step adds goes on top of the desired count.
        new = min((running if fresh else desired) + add, self._max_tasks)
        if new <= desired:
            return desired
        self.cooldown.took(t, add)
        return new
