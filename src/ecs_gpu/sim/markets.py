"""On-Demand and Spot in one fleet: which group a launch goes to, and Spot interruptions.

The template deploys two groups, each with its own capacity provider, and the
service's strategy (ecs_gpu.design.spot) splits its tasks between them. The
simulator keeps one fleet and one managed-scaling loop, and marks each
instance On-Demand or Spot: a launch goes to the group further below the
instances its share of the tasks needs. A scale-in removes the newest empty
instance of either group, as without Spot, so a design without
interruptions makes exactly its On-Demand twin's decisions and the
overload difference is the interruptions' alone; the launches keep the
split near the strategy's. A task places on any free slot, so a Spot
interruption's replacements take On-Demand room when there is some, else a
new instance from the other pools (docs/simulator.md "Spot").
"""

from __future__ import annotations

import heapq
import math

import numpy as np

from ecs_gpu.design import spot
from ecs_gpu.sim.fleet import Fleet, Instance
from ecs_gpu.sim.params import SimParams

# The interruptions' own random stream beside the run's seed, so a Spot
# design draws the same boots and arrivals as its On-Demand twin.
SPOT_STREAM = 0x5907


class Markets:
    """The strategy's split of instances, and each Spot instance's interruption."""

    __slots__ = ("_due", "_notice_s", "_rate", "_rng", "base", "interruptions", "percent",
                 "replaced", "tpi")  # fmt: skip

    def __init__(self, p: SimParams, seed: int) -> None:
        self.base = p.spot.on_demand_base
        self.percent = p.spot.percent
        self.tpi = p.tasks_per_instance
        self._rate = p.spot.interruptions_per_hour
        self._notice_s = p.spot.notice_s
        self._rng = np.random.default_rng([seed, SPOT_STREAM])
        self._due: list[tuple[float, int, Instance]] = []
        self.interruptions = 0
        self.replaced = 0

    def needs(self, tasks: int) -> tuple[int, int]:
        """Instances (On-Demand, Spot) that hold the strategy's split of ``tasks``."""
        od, on_spot = spot.split(tasks, self.base, self.percent)
        return -(-od // self.tpi), -(-on_spot // self.tpi)

    def _gaps(self, fleet: Fleet) -> tuple[int, int]:
        """How far each group is below its need (negative: above it)."""
        od_need, spot_need = self.needs(fleet.desired_total)
        od_have = len(fleet.instances) - fleet.spot_count
        return od_need - od_have, spot_need - fleet.spot_count

    def next_is_spot(self, fleet: Fleet) -> bool:
        """Whether the next launch is Spot: the group further below its need.

        On-Demand on a tie.
        """
        od_gap, spot_gap = self._gaps(fleet)
        return spot_gap > 0 and spot_gap > od_gap

    def interrupt_at(self, t: float) -> float:
        """When a Spot instance launched at ``t`` gets its notice: exponential at the rate."""
        if self._rate <= 0:
            return math.inf
        return t + float(self._rng.exponential(3600.0 / self._rate))

    def watch(self, inst: Instance) -> None:
        if inst.spot and math.isfinite(inst.interrupt_at):
            heapq.heappush(self._due, (inst.interrupt_at, inst.id, inst))

    def step(self, t: float, fleet: Fleet) -> None:
        """Send the notices due by ``t`` and reclaim the instances whose two minutes are over."""
        if fleet.draining:
            fleet.reap(t)
        due = self._due
        while due and due[0][0] <= t:
            _, _, inst = heapq.heappop(due)
            if inst in fleet.instances:  # not scaled in before its notice
                self.replaced += fleet.interrupt(inst, t, self._notice_s)
                self.interruptions += 1
