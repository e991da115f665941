"""The least GPU-hours any fleet AWS allows can pay on a load, within an overload budget.

The oracle (engine.oracle_gpu_hours) runs the tasks each step needs and the
instances that hold them, as if an instance could leave the moment it is
empty. On AWS it cannot: managed scaling removes instances only after its
CapacityProviderReservation low alarm has seen ``cpr_low_datapoints`` (15)
one-minute datapoints below the target in a row (aws-semantics §2), and no
other policy may scale the group (§10 "Other scaling policies on a managed
group"). So this floor keeps that rule and relaxes everything else in the
fleet's favour:

* it knows the load in advance, and an instance serves the minute it is
  asked for (no boot, pull or model load, no launch lag);
* tasks change at any step, and a step's capacity is the instances' tasks
  (``tasks_per_instance`` each, at most ``max_tasks``) at ``task_capacity_rps``
  each, full load, not the target;
* the count rises at any minute (a rise needs a high datapoint, so it ends a
  low streak), and after ``cpr_low_datapoints`` low minutes in a row it may
  fall to any count, again every minute while the minutes stay low, with no
  50 % step cap and no floor;
* a minute counts as low if one of its steps has an instance empty (capacity
  one instance's tasks below the count), wherever ECS samples it;
* nothing is billed before the trace or after it.

Every fleet the simulator runs with managed scaling obeys these rules (its
instances rise only by managed scaling and leave only after the low
streak), so none pays less than the floor for the same overload. The floor
is the minimum over schedules of GPU-hours with overload steps within a
budget; its Lagrangian dual (minimise GPU-hours + lambda x overload steps,
an exact dynamic programme over (instances, low minutes in a row), minus
lambda x budget) is a lower bound for every lambda >= 0 (weak duality), and
the largest found is :attr:`Floor.lower_gpu_hours`. The dual's own schedule
that fits the budget is a fleet these rules allow: :attr:`Floor.fleet_gpu_hours`
(an upper bound on the relaxed problem's optimum, not a design AWS runs).

Overload is the simulator's (engine.Recorder.account): a step whose offered
rate is above the ready capacity.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from ecs_gpu.sim.params import SimParams

MINUTE_S = 60.0
# The dual's multipliers tried, in GPU-hours per overload step: 0 (overload
# is free) up to a price no fleet pays (every step served).
_LAMBDAS = (0.0, *np.geomspace(1e-4, 1e3, 39))
# Overload steps of a low minute at 0 instances (none to leave empty): never cheaper.
_NEVER = 1e9


@dataclass(frozen=True, slots=True)
class Floor:
    """The floor of one load, with ``budget_steps`` overload steps allowed."""

    budget_steps: int
    # No fleet the rules allow pays less for at most budget_steps overload steps.
    lower_gpu_hours: float
    # A fleet the rules allow, within the budget: its GPU-hours and overload steps.
    fleet_gpu_hours: float
    fleet_overload_steps: int
    step_s: float


def step_needs(p: SimParams, offered_rps: npt.ArrayLike) -> npt.NDArray[np.int64]:
    """Tasks each step needs at full load: the fewest whose capacity is not below the rate."""
    rates = np.asarray(offered_rps, dtype=np.float64)
    need = np.where(rates > 0, np.ceil(rates / p.task_capacity_rps - 1e-9), 0.0)
    return need.astype(np.int64)


def _overload_table(
    needs: npt.NDArray[np.int64], caps: npt.NDArray[np.int64]
) -> npt.NDArray[np.int64]:
    """[step, count]: 1 where the step's need is above that count's capacity."""
    return (needs[:, None] > caps[None, :]).astype(np.int64)


# A path's (dual objective, GPU-hours, overload steps), elementwise.
_Path = tuple[npt.NDArray[np.float64], npt.NDArray[np.float64], npt.NDArray[np.float64]]


def _best(*paths: _Path) -> _Path:
    """Elementwise, the path of least objective among ``paths`` (the first on ties)."""
    value, cost, over = (np.array(x, dtype=np.float64) for x in paths[0])
    for v, c, o in paths[1:]:
        better = v < value
        value = np.where(better, v, value)
        cost = np.where(better, c, cost)
        over = np.where(better, o, over)
    return value, cost, over


def _prefix_best(path: _Path, strict: bool) -> _Path:
    """Along the last axis, the best path at an index at or below each one (``strict``:
    below), the first on ties; +inf where there is none."""
    value, cost, over = path
    n = value.shape[-1]
    run = np.minimum.accumulate(value, axis=-1)
    j = np.arange(n)
    new = np.concatenate(
        (np.ones((*value.shape[:-1], 1), dtype=bool), value[..., 1:] < run[..., :-1]), axis=-1
    )
    at = np.maximum.accumulate(np.where(new, j, 0), axis=-1)
    out = (run, np.take_along_axis(cost, at, -1), np.take_along_axis(over, at, -1))
    if not strict:
        return out
    pad = np.full((*value.shape[:-1], 1), math.inf)
    zero = np.zeros_like(pad)
    return (
        np.concatenate((pad, out[0][..., :-1]), axis=-1),
        np.concatenate((zero, out[1][..., :-1]), axis=-1),
        np.concatenate((zero, out[2][..., :-1]), axis=-1),
    )


def _dual(
    minutes: list[tuple[npt.NDArray[np.float64], npt.NDArray[np.float64], float]],
    billed: npt.NDArray[np.float64],
    low_run: int,
    lams: npt.NDArray[np.float64],
) -> _Path:
    """For each multiplier in ``lams``: the least GPU-hours + lam x overload steps over
    every schedule the rules allow, and that schedule's GPU-hours and overload steps.

    ``minutes``: per minute, the overload steps at each instance count with
    every instance's tasks serving, the same with the minute starting low (an
    instance empty at the minute's CPR sample, so one instance's tasks short
    until a task placed after it could be ready: ``inf`` at 0 instances), and
    the minute's share of a whole minute. State: the instance count and the
    low samples in a row (capped at ``low_run``), one row per multiplier.
    Each minute starts with managed scaling's decision (the simulator's
    order, managed_scaling.InstanceLayer): a sample that is not low may
    rise to any count; a low one keeps the count, or after ``low_run`` low
    samples in a row falls to any smaller count (whose tasks are then the
    capacity).
    """
    nl, n = len(lams), len(billed)
    lam = lams[:, None, None]
    shape = (nl, low_run + 1, n)
    # Start anywhere, free to fall.
    path: _Path = (np.full(shape, math.inf), np.zeros(shape), np.zeros(shape))
    path[0][:, low_run, :] = 0.0
    for full_ov, low_ov, share in minutes:
        fee = billed * share
        value, cost, over = path
        any_k = _best(*((value[:, k], cost[:, k], over[:, k]) for k in range(low_run + 1)))
        # Not low: the same count or a rise; the streak ends.
        rise = _prefix_best(any_k, strict=False)
        full = (rise[0] + fee + lams[:, None] * full_ov, rise[1] + fee, rise[2] + full_ov)
        # Low, keeping the count: the streak grows.
        kept = (value + fee + lam * low_ov, cost + fee, over + low_ov)
        grown = _best(
            *(
                (kept[0][:, k], kept[1][:, k], kept[2][:, k])
                for k in range(low_run - 1, low_run + 1)
            )
        )
        # Low with the streak complete: fall to a smaller count.
        src = _best(
            *((value[:, k], cost[:, k], over[:, k]) for k in range(low_run - 1, low_run + 1))
        )
        below = _prefix_best(
            tuple(x[..., ::-1] for x in src),  # type: ignore[arg-type]
            strict=True,
        )
        below = tuple(x[..., ::-1] for x in below)  # type: ignore[assignment]
        fell = (below[0] + fee + lams[:, None] * full_ov, below[1] + fee, below[2] + full_ov)
        new_value = np.empty(shape)
        new_cost = np.empty(shape)
        new_over = np.empty(shape)
        new_value[:, 0], new_cost[:, 0], new_over[:, 0] = full
        new_value[:, 1:low_run] = kept[0][:, : low_run - 1]
        new_cost[:, 1:low_run] = kept[1][:, : low_run - 1]
        new_over[:, 1:low_run] = kept[2][:, : low_run - 1]
        new_value[:, low_run], new_cost[:, low_run], new_over[:, low_run] = _best(grown, fell)
        path = (new_value, new_cost, new_over)
    value, cost, over = (x.reshape(nl, -1) for x in path)
    at = value.argmin(axis=1)
    rows = np.arange(nl)
    return value[rows, at], cost[rows, at], over[rows, at]


def fleet_floor(
    p: SimParams, offered_rps: npt.ArrayLike, step_s: float, budget_steps: int
) -> Floor:
    """The floor on ``offered_rps`` (one rate per ``step_s`` step) with at most
    ``budget_steps`` overload steps allowed."""
    needs = step_needs(p, offered_rps)
    per = round(MINUTE_S / step_s)
    # A task placed after a low sample serves no sooner than its model load
    # (on an instance that has the image): that long, one instance short.
    short = min(per, max(1, math.ceil(p.model_load_s / step_s - 1e-9)))
    counts = np.arange(p.max_instances + 1, dtype=np.int64)
    full_caps = np.minimum(counts * p.tasks_per_instance, p.max_tasks)
    low_caps = np.minimum(np.maximum(counts - 1, 0) * p.tasks_per_instance, p.max_tasks)
    minutes = []
    for start in range(0, len(needs), per):
        block = needs[start : start + per]
        full = _overload_table(block, full_caps)
        low = _overload_table(block[:short], low_caps).sum(axis=0) + full[short:].sum(axis=0)
        # No instance to leave empty at 0.
        low_ov = np.where(counts == 0, _NEVER, low).astype(np.float64)
        minutes.append((full.sum(axis=0).astype(np.float64), low_ov, len(block) / per))
    billed = counts * p.gpus_per_instance * MINUTE_S / 3600.0
    lams = np.asarray(_LAMBDAS, dtype=np.float64)
    value, gpu_h, ov = _dual(
        minutes, billed.astype(np.float64), p.managed_scaling.cpr_low_datapoints, lams
    )
    lower = max(0.0, float(np.max(value - lams * budget_steps)))
    fits = ov <= budget_steps
    fleet = (
        (float(gpu_h[fits].min()), int(ov[fits][gpu_h[fits].argmin()]))
        if fits.any()
        else (math.inf, 0)
    )
    return Floor(budget_steps, lower, fleet[0], fleet[1], step_s)


@dataclass(frozen=True, slots=True)
class ConstantFleet:
    """The fewest instances that, held all the load long, stay within an overload budget."""

    instances: int
    gpu_hours: float
    overload_steps: int


def constant_fleet(
    p: SimParams, offered_rps: npt.ArrayLike, step_s: float, budget_steps: int
) -> ConstantFleet | None:
    """The least constant fleet on ``offered_rps`` within ``budget_steps`` overload steps,
    or None when not even ``max_instances`` is.

    A fleet that never scales (``min_instances = max_instances``, tasks the
    same) is causal: it needs no foresight, only the count. So where it fits
    the budget for no more GPU-hours than a goal allows, the goal is within a
    design's reach, and what misses it is how the design adapts, not what it
    cannot know. Its overload is the simulator's (a step whose rate is above
    the ready capacity, at full load), with every task ready all along.
    """
    needs = step_needs(p, offered_rps)
    hours = len(needs) * step_s / 3600.0
    for n in range(p.max_instances + 1):
        over = int((needs > min(n * p.tasks_per_instance, p.max_tasks)).sum())
        if over <= budget_steps:
            return ConstantFleet(n, n * p.gpus_per_instance * hours, over)
    return None
