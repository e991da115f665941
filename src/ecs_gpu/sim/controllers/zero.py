"""What scale to zero costs and saves: idle GPU time and the first requests' waits."""

from __future__ import annotations

from typing import Any

from ecs_gpu.sim.controllers.base import Context, Controller
from ecs_gpu.sim.controllers.sleep import SleepLayer
from ecs_gpu.sim.controllers.wake import WakeLayer


class ZeroRecorder(Controller):
    """Idle cost and cold-start waits, for a design that may run no task.

    Idle: steps with no offered load; what is billed then (instances and a
    running pool) is the fleet paying for nothing. A wait starts at the first
    request that arrives while no task is ready and ends when one is: what
    the first request after zero waits for (docs/simulator.md "Scale to zero").
    """

    __slots__ = ("_gpus", "_sleep", "_wake", "idle_billed_s", "idle_s", "since", "step_s", "waits")

    def __init__(
        self,
        step_s: float,
        gpus_per_instance: int,
        wake: WakeLayer | None = None,
        sleep: SleepLayer | None = None,
    ) -> None:
        self.step_s = step_s
        self._gpus = gpus_per_instance
        # The paths whose actions the summary counts.
        self._wake = wake
        self._sleep = sleep
        self.idle_s = self.idle_billed_s = 0.0
        self.waits: list[float] = []
        self.since: float | None = None

    def on_served(self, t: float, ctx: Context) -> None:
        self.account(t, ctx.rate, ctx.arrivals, ctx.fleet.ready, ctx.billed)

    def account(self, t: float, rate: float, arrivals: float, ready: int, billed: int) -> None:
        if rate <= 0:
            self.idle_s += self.step_s
            self.idle_billed_s += billed * self.step_s
        if ready:
            if self.since is not None:
                self.waits.append(t - self.since)
                self.since = None
        elif arrivals > 0 and self.since is None:
            self.since = t

    def summary(self, ctx: Context) -> dict[str, Any]:
        waits = self.waits
        return {
            "idle_hours": round(self.idle_s / 3600.0, 4),
            "idle_gpu_hours": round(self.idle_billed_s * self._gpus / 3600.0, 4),
            "wake_scale_outs": 0 if self._wake is None else self._wake.actions,
            "sleep_scale_ins": 0 if self._sleep is None else self._sleep.actions,
            "cold_start_waits_s": waits,
            "worst_cold_start_wait_s": max(waits) if waits else None,
            "waiting_at_end_s": None if self.since is None else ctx.duration_s - self.since,
        }
