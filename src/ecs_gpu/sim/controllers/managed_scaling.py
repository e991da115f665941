"""The instance layer: ECS managed scaling on the capacity provider's ASG, once a minute.

An EC2 Auto Scaling target-tracking policy on CapacityProviderReservation,
optionally fought by a host-CPU target-tracking policy on the same ASG (the
anti-pattern). :class:`InstanceLayer` launches (from the warm pool first,
into the Spot group when the strategy says) and terminates empty instances.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from ecs_gpu.sim import params as P
from ecs_gpu.sim.controllers.base import Context, Controller, breaching_high, breaching_low
from ecs_gpu.sim.controllers.target_tracking import target_tracking_vote
from ecs_gpu.sim.fleet import Fleet, WarmPool
from ecs_gpu.sim.markets import Markets
from ecs_gpu.sim.metrics import MetricSeries
from ecs_gpu.sim.params import SimParams


def capacity_provider_reservation(
    instances: int, provisioning_tasks: int, empty_instances: int, tasks_per_instance: int
) -> float:
    """CPR = M / N x 100 (aws-semantics §2).

    M is the instances needed: the existing ones plus enough for the
    provisioning tasks, or, with nothing to place, the non-empty ones. With
    N = 0, CPR is 200 if tasks wait (two instances) and 100 if none do.
    """
    if instances == 0:
        return P.CPR_FROM_ZERO if provisioning_tasks > 0 else 100.0
    if provisioning_tasks > 0:
        m = instances + -(-provisioning_tasks // tasks_per_instance)
    else:
        m = instances - empty_instances
    return 100.0 * m / instances


@dataclass(slots=True)
class AsgScaler:
    """EC2 Auto Scaling on the capacity provider's ASG.

    Policies: ECS managed scaling (target tracking on CPR with target =
    targetCapacity, 1-of-1 high and 15-of-15 low alarms), plus, if enabled,
    a host-CPU target-tracking policy. EC2 Auto Scaling with several
    policies scales out if any asks and in only if all do, to the largest
    capacity (same rules as §1).
    """

    target_capacity_percent: float
    floor_instances: int
    max_instances: int
    min_step: int
    max_step: int
    host_cpu_target_percent: float | None
    # The CPR low alarm's datapoints: AWS's 15 (ManagedScaling.cpr_low_datapoints).
    low_datapoints: int = P.CPR_LOW_DATAPOINTS

    def decide(
        self,
        instances: int,
        all_warm: bool,
        cpr: MetricSeries,
        host_cpu: MetricSeries | None,
    ) -> int:
        """Instances to add (> 0) or remove (< 0) this minute."""
        n = instances
        tc = self.target_capacity_percent
        outs: list[int] = []
        ins: list[int] = []
        lows = 0
        policies = 1
        c = cpr.latest
        if c is not None and breaching_high(cpr.history, P.CPR_HIGH_DATAPOINTS, tc):
            # From zero, CPR = 200 reads as two instances, not N x CPR / T = 0.
            needed = c / 100.0 * n if n > 0 else P.CPR_FROM_ZERO / 100.0
            outs.append(math.ceil(needed * 100.0 / tc - 1e-9))
        elif c is not None and breaching_low(cpr.history, self.low_datapoints, tc):
            lows += 1
            ins.append(math.ceil(c / 100.0 * n * 100.0 / tc - 1e-9))
        if self.host_cpu_target_percent is not None and host_cpu is not None:
            policies += 1
            # EC2 Auto Scaling: the guard row of aws-semantics §1 documents
            # Application Auto Scaling, so this policy keeps the latest datapoint.
            vote = target_tracking_vote(
                host_cpu.history, self.host_cpu_target_percent, n, scale_in_basis="latest"
            )
            if vote.high:
                outs.append(vote.proposal)
            elif vote.low:
                lows += 1
                ins.append(vote.proposal)
        if outs:
            want = min(max(outs), self.max_instances)
            # The next step waits until every new instance is past warm-up (§2).
            if want > n and all_warm:
                step = min(max(want - n, self.min_step), self.max_step)
                return min(step, self.max_instances - n)
            return 0
        if lows == policies and ins:
            want = max(max(ins), self.floor_instances)
            if want < n:
                # "More than one instance and less than 50 %" a minute (§2).
                cap = max(1, math.ceil(n * P.SCALE_IN_MAX_FRACTION) - 1)
                return -min(n - want, cap)
        return 0


class InstanceLayer(Controller):
    """Managed scaling (and the optional host-CPU policy) on the ASG, once a minute."""

    __slots__ = (
        "_boot_time",
        "_cpr_delay",
        "_floor",
        "_host_cpu",
        "_tpi",
        "_warmup",
        "asg",
        "cpr",
        "last_cpr",
        "markets",
        "pool",
    )

    def __init__(
        self,
        p: SimParams,
        boot_time: Callable[[], float],
        pool: WarmPool | None = None,
        markets: Markets | None = None,
        host_cpu: MetricSeries | None = None,
    ) -> None:
        ms = p.managed_scaling
        self.pool = pool
        # [capacity.spot]: which group each launch and scale-in goes to.
        self.markets = markets
        self.asg = AsgScaler(
            ms.target_capacity_percent,
            p.floor_instances,
            p.max_instances,
            ms.min_scaling_step,
            ms.max_scaling_step,
            ms.host_cpu_policy_target_percent,
            ms.cpr_low_datapoints,
        )
        self.cpr = MetricSeries(window=max(P.CPR_LOW_DATAPOINTS, ms.cpr_low_datapoints))
        self.last_cpr = math.nan
        self._boot_time = boot_time
        self._floor = p.floor_instances
        self._warmup = ms.instance_warmup_s
        self._tpi = p.tasks_per_instance
        self._cpr_delay = ms.cpr_delay_s
        # The host-CPU series, read only with the host-CPU policy.
        self._host_cpu = host_cpu if ms.host_cpu_policy_target_percent is not None else None

    def on_minute(self, t: float, ctx: Context) -> None:
        """Publish CPR, let the ASG's policies decide, launch or terminate instances."""
        fleet = ctx.fleet
        self.last_cpr = capacity_provider_reservation(
            len(fleet.instances), fleet.provisioning, fleet.empty_registered(), self._tpi
        )
        self.cpr.publish(t + self._cpr_delay, self.last_cpr)
        self.cpr.visible(t)
        delta = self.asg.decide(len(fleet.instances), fleet.all_warm(t), self.cpr, self._host_cpu)
        if delta > 0:
            for _ in range(delta):
                self.launch(t, fleet)
        elif delta < 0:
            removed = fleet.terminate_empty(-delta)
            if self.pool is not None:
                self.pool.give_back(t, removed, len(fleet.instances))
        while len(fleet.instances) < self._floor:
            # The floor is the On-Demand group's min_instances (or its reservation).
            self.launch(t, fleet, spot_ok=False)
        if self.pool is not None:
            # The pool is the On-Demand group's: it sizes itself on that group alone.
            self.pool.fill(t, len(fleet.instances) - fleet.spot_count)

    def launch(self, t: float, fleet: Fleet, *, spot_ok: bool = True) -> None:
        """One instance: from the warm pool when one is prepared, else a new launch.

        With [capacity.spot], a launch the strategy gives the Spot group is a
        new Spot instance (that group has no pool).
        """
        markets = self.markets
        if spot_ok and markets is not None and markets.next_is_spot(fleet):
            inst = fleet.launch(
                t, self._boot_time(), self._warmup, spot=True, interrupt_at=markets.interrupt_at(t)
            )
            markets.watch(inst)
            return
        pool = self.pool
        if pool is not None and pool.take(t):
            inst = fleet.launch(t, pool.register_s, self._warmup)
            # The warm unit pulled the image while the instance warmed.
            inst.image_ready_at = inst.registered_at
            return
        fleet.launch(t, self._boot_time(), self._warmup)
