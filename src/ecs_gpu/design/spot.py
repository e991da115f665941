"""Spot capacity's numbers, read by both the template and the simulator.

The service's capacity-provider strategy (the On-Demand base and the
weights), how that strategy splits a task count between the two groups, the
Spot Instance Advisor's interruption bands as rates per instance-hour, the
two-minute notice, and the Spot price. Sources: docs/aws-semantics.md §11.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

from ecs_gpu import catalog
from ecs_gpu.contracts import signals
from ecs_gpu.spec import Spec

# EC2 sends the interruption notice two minutes before it reclaims the
# instance (EC2 User Guide, "Spot Instance interruption notices").
NOTICE_S: Final = 120.0
# The agent setting that puts a noticed Spot instance into DRAINING (ECS
# developer guide, "Configuring Amazon ECS Linux container instances to
# receive Spot Instance notices"); off by default.
DRAIN_FLAG: Final = "ECS_ENABLE_SPOT_INSTANCE_DRAINING"
# What the agent calls, as the instance role, to set a noticed instance DRAINING
# (aws/amazon-ecs-agent agent/app/agent.go spotInstanceDrainingPoller;
# AmazonEC2ContainerServiceforEC2Role grants it): without it the flag drains nothing.
DRAIN_ACTION: Final = "ecs:UpdateContainerInstancesState"
# The Spot group's allocation strategy (InstancesDistribution
# SpotAllocationStrategy): the lowest-priced pools among those least likely
# to be interrupted.
ALLOCATION: Final = "price-capacity-optimized"
# The Advisor's "frequency of interruption": the share of Spot capacity
# reclaimed over the trailing month, in bands. Each band's upper edge (an
# estimate on the safe side; >20 % has none, so five points past its lower
# edge, as wide as the others).
BAND_MONTHLY_SHARE: Final[dict[str, float]] = {
    "<5%": 0.05,
    "5-10%": 0.10,
    "10-15%": 0.15,
    "15-20%": 0.20,
    ">20%": 0.25,
}
# The Advisor's month, in hours (365 x 24 / 12).
HOURS_PER_MONTH: Final = 730.0


def band_rate_per_hour(band: str) -> float:
    """Interruptions per instance-hour that reclaim ``band``'s share of instances in a month.

    A constant rate r reclaims 1 - exp(-r x 730 h) of the instances that run
    the whole month, so r = -ln(1 - share) / 730.
    """
    return -math.log1p(-BAND_MONTHLY_SHARE[band]) / HOURS_PER_MONTH


@dataclass(frozen=True)
class Strategy:
    """The service's capacity-provider strategy: base and weight of each group.

    Only one provider of a strategy may have a base (CapacityProviderStrategyItem),
    so the base is On-Demand's; the weights split the tasks above it.
    """

    on_demand_base: int
    on_demand_weight: int
    spot_weight: int


def strategy(spec: Spec) -> Strategy | None:
    """The strategy of ``spec``'s [capacity.spot], None without one."""
    spot = spec.capacity.spot
    if spot is None:
        return None
    return Strategy(spot.on_demand_base, 100 - spot.spot_percent, spot.spot_percent)


def split(tasks: int, base: int, spot_percent: int) -> tuple[int, int]:
    """How ``tasks`` divide into (On-Demand, Spot): the base first, then the weights.

    ECS does not document how a weighted share rounds; half a task goes to
    Spot (aws-semantics §11 [gap]).
    """
    od = min(tasks, base)
    above = tasks - od
    on_spot = math.floor(above * spot_percent / 100 + 0.5)
    return od + above - on_spot, on_spot


def interruption_rate_per_hour(spec: Spec) -> float:
    """The simulator's Spot interruptions per instance-hour: the key, else the band's rate."""
    sim = spec.simulation
    if sim.spot_interruptions_per_instance_hour is not None:
        return sim.spot_interruptions_per_instance_hour
    return band_rate_per_hour(sim.spot_interruption_band)


def missing_discounts(spec: Spec) -> list[str]:
    """The listed Spot types with no discount: no [simulation] key and no cited family figure."""
    spot = spec.capacity.spot
    if spot is None or spec.simulation.spot_discount_percent is not None:
        return []
    return [name for name in spot.instance_types if catalog.spot_discount(name) is None]


def price_usd_per_hour(spec: Spec) -> float | None:
    """A Spot instance-hour as the simulator bills it; None without a discount for every type.

    Each listed type's On-Demand price less its discount ([simulation]
    spot_discount_percent, else its family's cited figure), and the highest
    of them: price-capacity-optimized may launch any of the types.
    """
    spot = spec.capacity.spot
    if spot is None or missing_discounts(spec):
        return None
    key = spec.simulation.spot_discount_percent
    prices = []
    for name in spot.instance_types:
        cited = catalog.spot_discount(name)
        pct = key if key is not None else (cited.percent if cited is not None else 0.0)
        prices.append(catalog.lookup(name).price_usd_per_hour * (1 - pct / 100))
    return max(prices)


def group_spec(spec: Spec) -> Spec:
    """The Spot group as the On-Demand group's builders read a spec.

    No warm pool (EC2 Auto Scaling refuses one on a group that requests Spot
    Instances: PutWarmPool), no reservation (it holds On-Demand capacity) and
    a floor of 0 (the base is On-Demand's); its ceiling is max_instances.
    """
    cap = spec.capacity.model_copy(
        update={
            "warm_pool": None,
            "capacity_reservation_id": None,
            "reserved_instances": None,
            "min_instances": 0,
        }
    )
    return spec.model_copy(update={"capacity": cap})


# --- the Spot group's alarms (infra/observability.py, doctor's alarm checks) --------

# EC2 Auto Scaling's group metrics, turned on for both groups
# (infra/capacity.py: every group metric, at its one granularity, 1Minute):
# AWS/AutoScaling by AutoScalingGroupName (aws-semantics §11 "Group metrics").
GROUP_NAMESPACE: Final = "AWS/AutoScaling"
GROUP_DIMENSION: Final = "AutoScalingGroupName"
# "The number of instances that are running as part of the Auto Scaling
# group", pending and terminating ones left out.
IN_SERVICE_METRIC: Final = "GroupInServiceInstances"
# "The number of instances that the Auto Scaling group attempts to maintain."
DESIRED_METRIC: Final = "GroupDesiredCapacity"
GROUP_STATISTIC: Final = "Average"
GROUP_PERIOD_S: Final = 60
IN_SERVICE_ID: Final = "n"
DESIRED_ID: Final = "d"
GPU_ID: Final = "m"
# The Spot group's GPU series, or -1 while an instance is in service without
# it; 0 with none in service: a Spot group at zero publishes no GPU series,
# which is no fault (the threshold is 0, LessThan).
GPU_MISSING_EXPRESSION: Final = signals.missing_expression(GPU_ID, IN_SERVICE_ID)
GPU_MISSING_LABEL: Final = (
    "Spot GPU series, or -1 while a Spot instance is in service without it (0 with none)"
)
# The On-Demand group's GPU missing-metric alarm when that group may be empty
# (on_demand_may_be_empty): the same gate on its own GroupInServiceInstances,
# inside the scale-to-zero one (wake.MISSING_EXPRESSION) when both apply.
ON_DEMAND_GPU_MISSING_LABEL: Final = (
    "GPU series, or -1 while an On-Demand instance is in service without it (0 with none)"
)
ON_DEMAND_GPU_MISSING_ASLEEP_LABEL: Final = (
    "GPU series, or -1 while a task runs and an On-Demand instance is in service "
    "without it (0 otherwise)"
)


def on_demand_claim(on_demand_base: int, spot_percent: int | None = None) -> str | None:
    """Why the service's tasks need an On-Demand host, as a spec key reads, or None when
    every task may run on Spot: a base puts the first tasks on On-Demand, and
    ``spot_percent = 0`` every task (aws-semantics §11 "Strategy base and weight")."""
    if spot_percent == 0:
        return "[capacity.spot] spot_percent = 0 puts every task on it"
    if on_demand_base >= 1:
        return f"[capacity.spot] on_demand_base = {on_demand_base} puts the first task(s) on it"
    return None


def on_demand_may_be_empty(spec: Spec) -> bool:
    """Whether the On-Demand group may have no instance while tasks run (on Spot).

    [capacity.spot] with ``on_demand_base = 0`` and [capacity] ``min_instances = 0``:
    the weights may put every task on Spot (one task: :func:`split` gives it to Spot
    at the default 70 %), managed scaling takes the On-Demand group to zero, and its
    hosts' GPU series stops by design. With a base ECS places the base's tasks first,
    and at ``spot_percent = 0`` every task (:func:`on_demand_claim`), so the group is
    empty only with no task, which ``wake.MISSING_EXPRESSION`` already reads as "not
    missing"; with ``min_instances`` >= 1 it always has an instance.
    """
    spot = spec.capacity.spot
    return (
        spot is not None
        and on_demand_claim(spot.on_demand_base, spot.spot_percent) is None
        and spec.capacity.min_instances == 0
    )


@dataclass(frozen=True)
class Publishers:
    """Which GPU groups' hosts must publish the agent's series (:func:`publishers`)."""

    # The groups whose series must arrive, the On-Demand group first.
    groups: tuple[str, ...]
    # Of those, the ones with no InService instance although one must run: a
    # problem of capacity (no host launched), not of the agent.
    hostless: tuple[str, ...] = ()


def publishers(
    on_demand: str,
    spot_asg: str | None,
    on_demand_base: int | None,
    in_service: Mapping[str, int],
    *,
    has_task: bool = True,
    spot_percent: int | None = None,
) -> Publishers:
    """The GPU groups that must publish the agent's series, and those with no host to.

    The one rule ``verify metrics`` and doctor's "is the GPU metric published" share.
    ``in_service`` is each group's InService instances (a group absent counts 0);
    ``has_task`` whether the service wants a task (True when not known).

    - Without [capacity.spot] (``spot_asg`` None): the one group, always; whether it has
      a host is for the missing series' causes, not this rule (``hostless`` empty).
    - A group with an InService instance must publish: every host runs the agent.
    - The Spot group at zero publishes nothing by design (MinSize 0: between
      interruptions, or while the base carries every task; a shortage is the shortfall
      alarm's).
    - The On-Demand group at zero with ``on_demand_base`` >= 1 or ``spot_percent`` 0
      while the service has a task must publish and is ``hostless``: ECS places the
      base's tasks on its provider first, and at weight 0 for Spot every task there
      (:func:`on_demand_claim`), so a task means an On-Demand host. Otherwise every task
      may run on Spot, and with no task the group may scale to zero: either way,
      nothing to verify there.

    ``groups`` empty: no host runs, so nothing can publish yet. The strategy is all it
    reads: a group held above zero by its MinSize yet empty failed to launch, which the
    Auto Scaling checks report.
    """
    if spot_asg is None or on_demand_base is None:
        return Publishers((on_demand,))
    od_required = has_task and on_demand_claim(on_demand_base, spot_percent) is not None
    od_empty = in_service.get(on_demand, 0) == 0
    groups = [on_demand] if od_required or not od_empty else []
    if in_service.get(spot_asg, 0) > 0:
        groups.append(spot_asg)
    return Publishers(tuple(groups), (on_demand,) if od_required and od_empty else ())


# Instances the Spot group wants and does not have in service.
SHORTFALL_EXPRESSION: Final = f"FILL({DESIRED_ID}, 0) - FILL({IN_SERVICE_ID}, 0)"
SHORTFALL_LABEL: Final = "Spot instances desired but not in service"
# One instance short is a shortfall (GreaterThanOrEqual).
SHORTFALL_THRESHOLD: Final = 1.0
GPU_MISSING_ALARM_ID: Final = "SpotGpuMetricMissing"
SHORTFALL_ALARM_ID: Final = "SpotCapacityShortfall"


def shortfall_alarm_description(spot_asg: str, minutes: int) -> str:
    """The shortfall alarm's description: what it means and what to do."""
    return (
        f"{spot_asg} has wanted more Spot instances than it has in service for {minutes} "
        "minutes: EC2 has no Spot capacity for its types in its Availability Zones (its "
        "activities read 'Could not launch Spot Instances. UnfulfillableCapacity'), and the "
        "service's Spot share of tasks waits in PROVISIONING. The group keeps "
        "trying. Now: raise [capacity.spot] on_demand_base or lower spot_percent and "
        "redeploy, so On-Demand carries the load; then list more interchangeable types in "
        "instance_types. Run `ecs-gpu doctor` (ASG checks) for the group's activities."
    )
