"""Transient measures over a run's recorded series: overshoot at the peak, scale-in after a drop.

Pure functions over the timeline's ``offered_rps`` and ``desired_tasks``
columns. "Need" is the design's own target, as the oracle reads it
(``SimParams.rps_per_task_at_target``): the offered load over what one task
serves at the target. Load is read as one-minute means, the period the
service's alarms evaluate: a 10-s burst of a per-request trace is no peak a
one-minute controller should size for. What counts as a load drop, and its
time to need, is :func:`find_drops` and :func:`drops_to_need`.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from ecs_gpu.sim.params import SimParams

MINUTE_S = 60.0
# A drop: a fall of 30 % within 5 minutes that lasts; the hold (10 minutes) is
# long enough to tell a drop from a dip and shorter than target tracking's
# 15-minute scale-in, so slow scale-ins show.
DROP_FALL = 0.3
DROP_WITHIN_S = 300.0
DROP_HOLD_S = 600.0
NEED_BAND = 0.1
# The goal for the time from a drop to within NEED_BAND of need (the goals
# table's bound in docs/benchmarks.md; the drop's 5-minute lookback is another
# number).
NEED_WITHIN_S = 300.0


def minute_means(series: npt.ArrayLike, step_s: float) -> npt.NDArray[np.float64]:
    """Means of ``series`` over each whole minute (a last partial minute is dropped)."""
    per = round(MINUTE_S / step_s)
    if per < 1 or abs(per * step_s - MINUTE_S) > 1e-9:
        raise ValueError(f"step_s {step_s!r} must divide {MINUTE_S:g} s")
    arr = np.asarray(series, dtype=np.float64)
    m = len(arr) // per
    return np.asarray(arr[: m * per].reshape(m, per).mean(axis=1), dtype=np.float64)


def tasks_needed(p: SimParams, rps: float) -> int:
    """Tasks that serve ``rps`` at exactly the design's target, not clipped to max_tasks."""
    return math.ceil(rps / p.rps_per_task_at_target - 1e-9) if rps > 0 else 0


@dataclass(frozen=True)
class PeakNeed:
    """The peak desired count against the tasks the peak one-minute load needs at target."""

    peak_rps: float
    need_tasks: int
    peak_desired: int

    @property
    def ratio(self) -> float | None:
        return self.peak_desired / self.need_tasks if self.need_tasks else None


def peak_vs_need(
    p: SimParams, offered_rps: Sequence[float], desired: Sequence[float], step_s: float
) -> PeakNeed:
    """The highest one-minute load, the tasks it needs at the target, the peak desired."""
    loads = minute_means(offered_rps, step_s)
    peak = float(loads.max()) if len(loads) else 0.0
    return PeakNeed(peak, tasks_needed(p, peak), int(max(desired, default=0)))


def need_per_step(
    p: SimParams, offered_rps: npt.ArrayLike, step_s: float
) -> npt.NDArray[np.float64]:
    """Each step's need: its minute's load at the target, clipped to min_tasks..max_tasks
    (desired cannot leave them); steps of a last partial minute are dropped."""
    loads = minute_means(offered_rps, step_s)
    # p.tasks_for_rate for every minute at once, then for every step.
    raw = np.where(loads > 0, np.ceil(loads / p.rps_per_task_at_target - 1e-9), 0.0)
    return np.repeat(np.clip(raw, p.min_tasks, p.max_tasks), round(MINUTE_S / step_s))


@dataclass(frozen=True)
class LoadDrop:
    """One load drop: when, from which level, and how long desired took to meet the need."""

    at_s: float
    before_rps: float
    down_s: float
    # None: not within the band while the load stayed down (unsettled).
    to_need_s: float | None


def find_drops(
    loads: npt.NDArray[np.float64],
    *,
    fall: float = DROP_FALL,
    within_min: int = round(DROP_WITHIN_S / MINUTE_S),
    hold_min: int = round(DROP_HOLD_S / MINUTE_S),
) -> list[tuple[int, int, float]]:
    """The drops in one-minute ``loads``: (first low minute, first minute back above the
    lowered level or the end, the level before).

    A drop starts at the first minute whose mean load is at least ``fall`` below
    the highest of the ``within_min`` minutes before it, and counts when the load
    then stays at or below that lowered level for ``hold_min`` minutes or more: a
    dip the load climbs back from sooner is no drop a scale-in should follow. A
    fall in stages while the load stays below that level is one drop.
    """
    out: list[tuple[int, int, float]] = []
    n = len(loads)
    k = 1
    while k < n:
        before = float(loads[max(0, k - within_min) : k].max())
        level = (1.0 - fall) * before
        if before > 0 and loads[k] <= level:
            end = k + 1
            while end < n and loads[end] <= level:
                end += 1
            if end - k >= hold_min:
                out.append((k, end, before))
            k = end
            continue
        k += 1
    return out


def drops_to_need(
    p: SimParams,
    offered_rps: npt.ArrayLike,
    desired: npt.ArrayLike,
    step_s: float,
    *,
    fall: float = DROP_FALL,
    within_s: float = DROP_WITHIN_S,
    hold_s: float = DROP_HOLD_S,
    band: float = NEED_BAND,
) -> list[LoadDrop]:
    """Every load drop of the run (:func:`find_drops`) and its time to need.

    The time to need runs from the start of the drop's first low minute until
    the desired count is first within ``band`` of the need (the tasks for that
    minute's load at the target, clipped to min_tasks..max_tasks, which desired
    cannot leave). A drop whose desired count never gets there while the load
    stays down is unsettled: its time is None and ``down_s`` says how long it had.
    """
    loads = minute_means(offered_rps, step_s)
    per = round(MINUTE_S / step_s)
    within, hold = round(within_s / MINUTE_S), round(hold_s / MINUTE_S)
    need = need_per_step(p, offered_rps, step_s)
    want = np.asarray(desired, dtype=np.float64)[: len(need)]
    ok = np.abs(want - need) <= band * need + 1e-9
    out: list[LoadDrop] = []
    for k, end, before in find_drops(loads, fall=fall, within_min=within, hold_min=hold):
        window = ok[k * per : end * per]
        hit = int(np.argmax(window)) if window.any() else None
        settle = None if hit is None else hit * step_s
        out.append(LoadDrop(k * MINUTE_S, before, (end - k) * MINUTE_S, settle))
    return out


@dataclass(frozen=True)
class DropStats:
    """Worst and median time to need over a run's drops; unsettled drops counted apart."""

    drops: int
    unsettled: int
    worst_s: float | None
    median_s: float | None


def drop_stats(drops: Sequence[LoadDrop]) -> DropStats:
    """Worst and median over the settled drops, and how many never settled."""
    done = [d.to_need_s for d in drops if d.to_need_s is not None]
    return DropStats(
        len(drops),
        len(drops) - len(done),
        max(done) if done else None,
        statistics.median(done) if done else None,
    )


def summary_keys(
    p: SimParams, offered_rps: Sequence[float], desired: Sequence[float], step_s: float
) -> dict[str, Any]:
    """The run summary's transient keys (docs/simulator.md "Outputs")."""
    peak = peak_vs_need(p, offered_rps, desired, step_s)
    stats = drop_stats(drops_to_need(p, offered_rps, desired, step_s))
    return {
        "peak_offered_rps_1min": round(peak.peak_rps, 4),
        "peak_need_tasks": peak.need_tasks,
        "peak_desired_to_need": None if peak.ratio is None else round(peak.ratio, 4),
        "load_drops": stats.drops,
        "load_drops_not_within_need": stats.unsettled,
        "drop_to_need_worst_s": stats.worst_s,
        "drop_to_need_median_s": stats.median_s,
    }
