"""The wake path: from zero tasks to the first, on the load balancer's requests."""

from __future__ import annotations

import math

from ecs_gpu.design.paths.wake import WakePath
from ecs_gpu.sim.controllers.base import Context, Controller
from ecs_gpu.sim.metrics import MetricSeries


class WakeLayer(Controller):
    """The wake path: a one-minute alarm on the load balancer's requests while no task runs.

    Each minute the ALB's datapoint is the requests that arrived (none
    published in a minute without one: aws-semantics §10), and the alarm's
    expression reads it only while ECS published no CPU datapoint for the
    service, i.e. no task was RUNNING in that minute (ecs_gpu.design.paths.wake). Both
    are visible ``delay_s`` after the minute. The alarm is 1 of 1 at the
    threshold and re-invokes its policy every minute while in ALARM
    (params.ALARM_REINVOKE_S); the step adds ``tasks`` to the RUNNING count
    (aws-semantics §1 "Base for the computation"), at most max_tasks, and
    the cooldown holds a further increase: the policy "won't increase the
    desired capacity again unless either a larger scale out is triggered or
    the cooldown period ends", and its one step is never larger. A scale-in
    (the sleep's 0) leaves the cooldown running: AWS says only that a
    scale-out ends a scale-in's cooldown (§10 "The wake's cooldown after a
    sleep", a gap). A held invocation is not kept: the alarm invokes again
    only in a later minute that reads requests.
    """

    __slots__ = ("_delay", "_ran", "_requests", "_wp", "actions", "last_action", "series")

    def __init__(self, wp: WakePath, delay_s: float) -> None:
        self._wp = wp
        self._delay = delay_s
        self.series = MetricSeries(window=wp.evaluation_periods)
        self._requests = 0.0
        self._ran = False
        self.last_action = -math.inf
        self.actions = 0

    def on_minute(self, t: float, ctx: Context) -> None:
        self.close_minute(t)
        service = ctx.service
        want = self.decide(t, ctx.fleet.running, service.desired, service.scaler.max_tasks)
        service.set_desired(t, ctx.fleet, want)

    def on_served(self, t: float, ctx: Context) -> None:
        self.sample(ctx.arrivals, ctx.fleet.running)

    def sample(self, arrivals: float, running: int) -> None:
        """One step's requests at the load balancer and whether a task was RUNNING."""
        self._requests += arrivals
        self._ran = self._ran or running > 0

    def close_minute(self, t: float) -> None:
        """Publish the minute that ended at ``t``: None without requests (the ALB sends none)."""
        value = None if self._requests <= 0 else (0.0 if self._ran else self._requests)
        self.series.publish(t + self._delay, value)
        self._requests, self._ran = 0.0, False

    def decide(self, t: float, running: int, desired: int, max_tasks: int) -> int:
        """The desired count after this minute's evaluation (never lower)."""
        self.series.visible(t)
        v = self.series.latest
        if v is None or v < self._wp.threshold:
            return desired
        if t < self.last_action + self._wp.cooldown_s:
            return desired
        new = min(running + self._wp.tasks, max_tasks)
        if new <= desired:
            return desired
        self.last_action = t
        self.actions += 1
        return new
