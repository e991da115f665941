"""[capacity.spot] in the loop: interruptions each step, and the Spot instance time billed.

Which group a launch goes to and when an instance is interrupted is
sim/markets.py; this controller sends the due notices before the fleet
places the step's tasks and bills the noticed instances until reclaimed.
"""

from __future__ import annotations

from typing import Any

from ecs_gpu.sim.controllers.base import Context, Controller
from ecs_gpu.sim.markets import Markets
from ecs_gpu.sim.params import Spot


class SpotMarket(Controller):
    """Spot interruptions and Spot instance time, the noticed instances included."""

    __slots__ = ("_spot", "markets")

    def __init__(self, markets: Markets, spot: Spot) -> None:
        self.markets = markets
        self._spot = spot

    def on_step_start(self, t: float, ctx: Context) -> None:
        self.markets.step(t, ctx.fleet)

    def billed(self, t: float, ctx: Context) -> int:
        # Noticed instances left the fleet but bill until EC2 reclaims them.
        fleet = ctx.fleet
        leaving = len(fleet.draining)
        ctx.spot_s += (fleet.spot_count + leaving) * ctx.step_s
        return leaving

    def summary(self, ctx: Context) -> dict[str, Any]:
        sp = self._spot
        return {
            "spot_percent": sp.percent,
            "on_demand_base": sp.on_demand_base,
            "spot_instance_hours": round(ctx.spot_s / 3600.0, 4),
            "spot_interruptions": self.markets.interruptions,
            "spot_replaced_tasks": self.markets.replaced,
            "spot_interruptions_per_instance_hour": sp.interruptions_per_hour,
            "spot_price_usd_per_hour": round(sp.price_usd_per_hour, 4),
        }
