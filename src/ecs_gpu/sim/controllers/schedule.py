"""[[scaling.schedule]]: scheduled actions that set the scalable target's min and max."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta

from ecs_gpu.sim.controllers.base import Context, Controller
from ecs_gpu.sim.params import ScheduledAction


class ScheduleLayer(Controller):
    """[[scaling.schedule]]: scheduled actions that set the scalable target's min and max.

    At each minute a cron matches (in UTC, from ``start_utc`` at t = 0), the
    target's minimum and maximum become the action's; a desired count below
    the new minimum scales out to it, one above the maximum in to it
    (ScalableTargetAction, aws-semantics §10). At t = 0 the action due then, or
    else the latest of the week before, is in force, as on a running service.
    """

    __slots__ = ("_actions", "_start")

    # How far back the state at t = 0 is looked for: a weekly schedule's cycle.
    LOOKBACK_MIN = 7 * 24 * 60

    def __init__(self, actions: Sequence[ScheduledAction], start_utc: datetime) -> None:
        self._actions = tuple(actions)
        self._start = start_utc

    def on_start(self, ctx: Context) -> None:
        if (state := self.initial()) is not None:
            self.apply(0.0, ctx, state)

    def on_minute(self, t: float, ctx: Context) -> None:
        if (state := self.due(t)) is not None:
            self.apply(t, ctx, state)

    def apply(self, t: float, ctx: Context, state: tuple[int, int]) -> None:
        """The target's new min and max, and the desired count within them."""
        service = ctx.service
        mn, mx = state
        service.scaler.min_tasks, service.scaler.max_tasks = mn, mx
        service.set_desired(t, ctx.fleet, min(max(service.desired, mn), mx))

    def initial(self) -> tuple[int, int] | None:
        """The (min, max) in force at t = 0: an action due at t = 0 itself, else the latest
        before it; None when none ran. (The engine's minute ticks start after t = 0,
        so an action at t = 0, Monday 00:00 UTC by default, is applied here or never.)"""
        for back in range(0, self.LOOKBACK_MIN + 1):
            at = self._start - timedelta(minutes=back)
            for cron, mn, mx in reversed(self._actions):
                if cron.matches(at):
                    return mn, mx
        return None

    def due(self, t: float) -> tuple[int, int] | None:
        """The (min, max) an action sets at ``t`` (the last one listed wins), or None."""
        at = self._start + timedelta(seconds=t)
        out = None
        for cron, mn, mx in self._actions:
            if cron.matches(at):
                out = (mn, mx)
        return out
