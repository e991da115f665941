"""The sleep path: to zero tasks after a run of minutes without a request."""

from __future__ import annotations

import math

from ecs_gpu.design.paths.sleep import NOT_RUNNING, SleepPath
from ecs_gpu.sim.controllers.base import Context, Controller
from ecs_gpu.sim.metrics import MetricSeries


class SleepLayer(Controller):
    """The sleep path: ExactCapacity 0 after ``minutes`` one-minute periods without a request.

    Each minute's datapoint is the requests that arrived at the load balancer
    plus its open connections, the most requests in flight in the minute (one
    connection each: a streaming response holds its own), visible
    ``delay_s`` after the minute (a count with no datapoint reads 0: FILL).
    It is read only in a minute with a RUNNING task (ECS's
    CPU datapoint, ecs_gpu.design.paths.sleep's gate); a minute without one reads 1, never
    quiet, so a task the wake started is not stopped while its instance boots
    and its image pulls. It is RUNNING, and its minutes may be quiet, while
    its model loads (fleet.Task: running_at before ready_at): ``minutes`` is
    the spec's ecs_gpu.design.paths.wake.quiet_minutes, which outlasts that load. The
    sidecars' in-flight series, which ``in_flight`` adds in the template, is
    never more than that. The alarm is ``minutes`` of
    ``minutes`` at or below 0 and re-invokes its policy every minute while in
    ALARM; the count it sets is never below the target's minimum (a schedule
    may have raised it; aws-semantics §10 "ExactCapacity and MinCapacity").
    """

    __slots__ = (
        "_delay",
        "_in_flight",
        "_ran",
        "_requests",
        "_sp",
        "actions",
        "last_invoke",
        "series",
    )

    def __init__(self, sp: SleepPath, delay_s: float) -> None:
        self._sp = sp
        self._delay = delay_s
        self.series = MetricSeries(window=sp.minutes)
        self._requests = self._in_flight = 0.0
        self._ran = False
        self.last_invoke = -math.inf
        self.actions = 0

    def on_minute(self, t: float, ctx: Context) -> None:
        self.close_minute(t)
        service = ctx.service
        want = self.decide(t, service.desired, service.scaler.min_tasks)
        service.set_desired(t, ctx.fleet, want)

    def on_served(self, t: float, ctx: Context) -> None:
        # In flight: the requests in service (Little's law) and waiting.
        queue = ctx.queue.queue
        self.sample(
            ctx.arrivals, ctx.served / ctx.step_s * ctx.mean_request_s + queue, ctx.fleet.running
        )

    def sample(self, arrivals: float, in_flight: float, running: int) -> None:
        """One step's requests at the load balancer, the requests in flight and the
        RUNNING tasks."""
        self._requests += arrivals
        self._in_flight = max(self._in_flight, in_flight)
        self._ran = self._ran or running > 0

    def close_minute(self, t: float) -> None:
        """Publish the minute that ended at ``t``: its requests and connections while a task
        ran, else ecs_gpu.design.paths.sleep's NOT_RUNNING."""
        value = self._requests + self._in_flight if self._ran else float(NOT_RUNNING)
        self.series.publish(t + self._delay, value)
        self._requests = self._in_flight = 0.0
        self._ran = False

    def decide(self, t: float, desired: int, min_tasks: int) -> int:
        """The desired count after this minute's evaluation (never higher)."""
        self.series.visible(t)
        h = self.series.history
        quiet = len(h) == self._sp.minutes and all(
            v is not None and v <= self._sp.threshold for v in h
        )
        if not quiet or t < self.last_invoke + self._sp.cooldown_s:
            return desired
        self.last_invoke = t
        new = max(self._sp.tasks, min_tasks)
        if new >= desired:
            return desired
        self.actions += 1
        return new
