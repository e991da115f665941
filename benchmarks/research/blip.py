"""A crowd or a blip: what no scale-out can tell apart within the overload bound.

The goals of docs/benchmarks.md "Pay for what you serve" ask, on every load,
for GPU-hours at most 1.5x the reference's and for no load's overload to be
more than 10 % above the in-flight concurrency design's. Take a
**crowd**: the load jumps at ``crowd_at_s`` to many times its base and
holds. If a fleet has at most ``budget_steps`` overloaded steps on it (the
engine's overload: a step whose offered rate is above the ready capacity),
one of the ``budget_steps + 1`` steps from the jump is not overloaded, so in
that step's minute the fleet has at least the instances whose tasks serve
the crowd's rate at full load (``floor.step_needs``; fewer can serve no
step of it, whatever else the fleet does).

The **blip** of the crowd (:func:`blip`) is the same load until the start of
the minute of the last of those steps (:attr:`BlipFloor.split_s`), then back
to the base. Before that the two loads are one, so any fleet whose instance
count in a minute depends only on the load before the minute (one that does
not see the future; the simulator's managed scaling decides at each minute
from past samples, managed_scaling.InstanceLayer) has the same counts on
both up to that minute: on the blip too it has at least that many instances
in some minute from the jump to the one that starts at the split. (The
fleet's instances are on ECS managed scaling, the chain this tool deploys: a
group whose scaling the user manages with managed scaling off is not bound
by its 15 minutes.)

Managed scaling keeps them (``floor.py``'s rules, aws-semantics §2 and §10;
the fleet is on a capacity provider with managed scaling, the chain this
tool deploys, On-Demand: EC2 may reclaim a Spot instance sooner):
the count rises only on a sample that is not low, which ends a low streak,
and falls only after ``cpr_low_datapoints`` (15) low samples in a row. So
whatever minute had that count, the fleet held at least it for 15 minutes
around it: the minutes of the streak it was in, which keep or lower the
count, and those after it until a streak of 15 completes (the blip's first
minutes are at least 15 minutes after the start of the trace, and it lasts
15 minutes past the split, so all of them are billed). That costs at least
``instances x 15 minutes`` of GPUs on the blip (:attr:`BlipFloor.gpu_hours`),
every other relaxation of ``floor.py`` granted: instant instances, tasks at
full load, the future of the crowd known.

The reference design is cheap on the blip: it is slow, and a blip shorter
than its scale-out's reaction costs it no instance. Where the floor is above
1.5x the reference's GPU-hours on the blip, no fleet meets both goals on the
two loads: within the bound on the crowd, over 1.5x the reference on the
blip (benchmarks/blip.py, docs/benchmarks.md "A crowd or a blip").
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from ecs_gpu.errors import BadInputError
from ecs_gpu.sim.params import SimParams
from research.floor import MINUTE_S, step_needs
from research.lull import lull
from research.stress import Knots


@dataclass(frozen=True)
class BlipFloor:
    """What every fleet within ``budget_steps`` on the crowd pays on its blip."""

    budget_steps: int
    # The blip leaves the crowd here: the start of the minute of the last step
    # the budget allows to be the first one served.
    split_s: float
    # The fewest instances that serve a step of the crowd at full load.
    instances: int
    # The minutes managed scaling holds them at least.
    held_minutes: int
    gpu_hours: float


def blip(crowd: Knots, floor: BlipFloor, base_rps: float) -> Knots:
    """``crowd`` until ``floor.split_s``, then at once ``base_rps`` for the minutes
    managed scaling holds the instances (so all of them are billed): the same load
    as the crowd at every step that ends by the split."""
    return lull(crowd, floor.split_s, base_rps, floor.held_minutes * MINUTE_S)


def blip_floor(
    p: SimParams,
    crowd_rps: npt.ArrayLike,
    step_s: float,
    crowd_at_s: float,
    budget_steps: int,
) -> BlipFloor:
    """The floor on the blip of ``crowd_rps`` (one rate per ``step_s`` step) for a
    fleet with at most ``budget_steps`` overloaded steps on the crowd from
    ``crowd_at_s`` on."""
    if p.spot.percent:
        # EC2 reclaims a Spot instance whenever it likes: it can leave before
        # managed scaling's low streak, so the 15 minutes are not the fleet's floor.
        raise BadInputError(
            "spot_percent: an interrupted Spot instance leaves before managed scaling's "
            "15 low minutes, so the floor does not hold. Fix: a design without [capacity.spot]."
        )
    rates = np.asarray(crowd_rps, dtype=np.float64)
    first = round(crowd_at_s / step_s) if step_s > 0 else -1
    per = round(MINUTE_S / step_s) if step_s > 0 else 0
    held = p.managed_scaling.cpr_low_datapoints
    if not (
        step_s > 0
        and per * step_s == MINUTE_S
        and budget_steps >= 0
        and first * step_s == crowd_at_s
        and crowd_at_s >= held * MINUTE_S
        and first + budget_steps < len(rates)
    ):
        raise BadInputError(
            f"crowd_at_s = {crowd_at_s!r}, step_s = {step_s!r}, budget_steps = "
            f"{budget_steps!r}: the step must divide a minute, the jump must be on a step "
            f"and at least {held} minutes in (managed scaling's low streak, so the minutes "
            f"it holds are in the load), the budget at least 0, and the crowd must last "
            f"past the budget (it has {len(rates)} steps). Fix: a longer crowd or a later jump."
        )
    window = rates[first : first + budget_steps + 1]
    tasks = int(step_needs(p, window).min())
    if tasks > p.max_tasks:
        raise BadInputError(
            f"the crowd needs {tasks} tasks at full load, above max_tasks {p.max_tasks}: no "
            "fleet serves a step of it, so the budget is not one any fleet keeps. Fix: a "
            "smaller crowd or a higher max_tasks."
        )
    instances = math.ceil(tasks / p.tasks_per_instance)
    last = first + budget_steps
    split = (last // per) * per * step_s
    gpu_hours = instances * p.gpus_per_instance * held * MINUTE_S / 3600.0
    return BlipFloor(budget_steps, split, instances, held, gpu_hours)
