"""A lull or a fall: what no scale-in can tell apart within five minutes of a drop.

The goals of docs/benchmarks.md "Pay for what you serve" ask, on every load,
for the desired count to be within 10 % of need at most 5 minutes after a
load drop, and for no load's overload to be more than 10 % above the in-flight
concurrency design's. A controller sees only the load so
far. Take a drop (``plateau-drop``: the load falls and stays down an hour)
and a step ``s`` in its first 5 minutes; the **lull** of ``s`` is the same
load up to ``s`` that comes back to its old level at the next step
(:func:`lull`). Until then the two loads are one, so any controller's desired
count at ``s`` is the same on both.

If that count is within 10 % of need at ``s`` on the drop, then on the lull:

* ECS has stopped the tasks above it: a service keeps its desired count of
  tasks, and a task it stops is deregistered first, after which the load
  balancer sends it no new request (aws-semantics.md §9 "Stopping a task
  on scale-in");
* a task started after ``s`` serves only after its model loads, at best
  on a registered instance with the image pulled (``SimParams.model_load_s``).

So from the rise until ``s`` + one step + the model load, the lull's load runs
on at most ``floor(1.1 x need)`` tasks: :func:`overload_floor` counts the
steps that overloads, whatever the controller. The in-flight concurrency design does not
scale in within 5 minutes (target tracking's 15 low datapoints), so on every
lull it keeps its tasks and has no overload (benchmarks/lull.py), a bound of
1.1 x 0 s: meeting the five minutes on the drop at ``s`` puts the lull of
``s`` over the overload bound. The loads "after a drop" and "after a lull"
are the same when the scale-in must act; only what follows tells them apart.

Any step within the 5 minutes where the count is within 10 % will do; the
benchmark takes the first, which ``transients.drops_to_need`` measures, and
the lull that comes back one step after it. "Need" is at the design's own
target (70 % here): at a target low enough, or a ``min_tasks`` high enough,
that the tasks within 10 % of the drop's need still serve the plateau at full
load, the floor is 0.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from itertools import pairwise

import numpy as np
import numpy.typing as npt

from ecs_gpu.errors import BadInputError
from ecs_gpu.sim.params import SimParams
from ecs_gpu.sim.transients import NEED_BAND
from research.stress import Knots


def rate_before(knots: Knots, t: float, name: str = "t") -> float:
    """The curve's rate just before ``t`` (its left limit: at a jump, the earlier value);
    ``name`` is the caller's for ``t`` in the error."""
    for (t0, r0), (t1, r1) in pairwise(knots):
        if t0 < t <= t1:
            return r0 + (r1 - r0) * (t - t0) / (t1 - t0)
    raise BadInputError(
        f"{name} = {t!r} s: not within the shape (after 0, up to {knots[-1][0]:g} s). "
        "Fix: a time inside it."
    )


def lull(knots: Knots, back_at_s: float, level_rps: float, hold_s: float) -> Knots:
    """``knots`` until ``back_at_s``, then at once ``level_rps`` for ``hold_s``.

    The same load as ``knots`` before ``back_at_s`` (every step that ends by
    then has the same rate), so a controller cannot tell the two apart until
    the load comes back.
    """
    if not (math.isfinite(level_rps) and level_rps >= 0):
        raise BadInputError(
            f"level_rps = {level_rps!r}: must be a finite rate of at least 0. Fix: e.g. the "
            "level before the drop."
        )
    if not (math.isfinite(hold_s) and hold_s > 0):
        raise BadInputError(f"hold_s = {hold_s!r}: must be a finite time above 0. Fix: e.g. 3600.")
    before = tuple(k for k in knots if k[0] < back_at_s)
    cut = rate_before(knots, back_at_s, "back_at_s")
    return (*before, (back_at_s, cut), (back_at_s, level_rps), (back_at_s + hold_s, level_rps))


@dataclass(frozen=True)
class LullFloor:
    """The least overload any controller has on the lull of ``decided_at_s``."""

    decided_at_s: float
    need_tasks: int
    # The most tasks within NEED_BAND of need: what the lull's rise finds.
    most_tasks: int
    # The least time from a task's start to serving: its model load.
    start_s: float
    overload_floor_s: float


def overload_floor(
    p: SimParams,
    lull_rps: npt.ArrayLike,
    step_s: float,
    decided_at_s: float,
    need_tasks: int,
    band: float = NEED_BAND,
) -> LullFloor:
    """The overload every controller has on ``lull_rps`` if its desired count at
    ``decided_at_s`` is within ``band`` of ``need_tasks``.

    A task ready at a step before ``decided_at_s`` + one step + the model load
    was started at ``decided_at_s`` or before and runs then, so it is one of
    that step's desired tasks: at most ``floor((1 + band) x need)``. Each such
    step whose load is above what they serve at full load
    (``task_capacity_rps`` each, the engine's overload test) is overloaded.
    """
    if p.spot.percent:
        # An interrupted Spot task serves while its instance drains
        # (engine: leaving_ready), beside the desired count.
        raise BadInputError(
            "spot_percent: the floor counts only the service's desired tasks, and an "
            "interrupted Spot task serves beside them. Fix: a design without [capacity.spot]."
        )
    rates = np.asarray(lull_rps, dtype=np.float64)
    first = round(decided_at_s / step_s) + 1
    if not (step_s > 0 and need_tasks >= 0 and 0 <= decided_at_s and first < len(rates)):
        raise BadInputError(
            f"decided_at_s = {decided_at_s!r}, step_s = {step_s!r}, need_tasks = "
            f"{need_tasks!r}: the step must be above 0, the need at least 0, and the lull "
            f"must have a step after decided_at_s (it has {len(rates)}). Fix: a time inside "
            "the load."
        )
    most = math.floor((1.0 + band) * need_tasks + 1e-9)
    last = first + math.ceil(p.model_load_s / step_s - 1e-9)
    window = rates[first : min(last, len(rates))]
    over = int(np.sum(window > most * p.task_capacity_rps + 1e-9))
    return LullFloor(decided_at_s, need_tasks, most, p.model_load_s, over * step_s)
