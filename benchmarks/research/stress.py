"""Made-up stress shapes: the load transients the bundled traces lack, as rate arrays.

The bundled traces (docs/traces.md) are real, but their 10-minute windows and
diurnal curves seldom change by a factor within minutes, which is where a
scaling design overshoots or holds capacity it no longer needs.
Each shape here is a piecewise-linear rate (knots of time and rate), so it
is exact and deterministic: no randomness, the same parameters give the
same array. :func:`rates` integrates it exactly onto a simulation step, as
``Trace.rates`` does a window trace, so every step's rate is the mean of the
curve over the step. Rates are relative to ``base_rps`` (default 1):
benchmarks scale them to a fleet as they scale a bundled trace.

* ``flash-crowd``: a steady base, then x4 within 2 minutes, held 40
  minutes, and back within 2 minutes.
* ``periodic-bursts``: 10-minute bursts of 3x every hour for a day.
* ``plateau-drop``: 3 hours at 3x, then down to the base within a minute
  for an hour. The fleet has settled at its target with no backlog before
  the drop, so the time until the desired count meets the need measures the
  scale-in path alone, without the flash crowd's overshoot mixed in: the
  shape the scale-in goal ("within 10 % of need in 5 minutes") is about (a batch
  client that stops, the end of a working day in one time zone).
* ``night-at-zero`` (:data:`ZERO_SHAPES`, for scale to zero): days of
  no load from 20:00 to 08:00 UTC (t = 0 is midnight UTC: params.DEFAULT_START_UTC),
  a 30-minute ramp to the base at each end of the working day: 12 idle
  hours a day, each morning a first request after zero.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from itertools import pairwise

import numpy as np
import numpy.typing as npt

from ecs_gpu.errors import BadInputError

Knots = tuple[tuple[float, float], ...]


def _positive(name: str, value: float, *, allow_zero: bool = False) -> None:
    ok = math.isfinite(value) and (value >= 0 if allow_zero else value > 0)
    if not ok:
        bound = "at least 0" if allow_zero else "above 0"
        raise BadInputError(
            f"{name} = {value!r}: must be a finite number {bound}. Fix: e.g. "
            f"{'0' if allow_zero else '1'}."
        )


def _factor(factor: float) -> None:
    # Below 1 a "crowd" or "burst" is a dip: another shape, not this one.
    if not (math.isfinite(factor) and factor >= 1.0):
        raise BadInputError(
            f"factor = {factor!r}: must be a finite number of at least 1 (the peak over the "
            "base). Fix: e.g. 3."
        )


def flash_crowd(
    *,
    base_rps: float = 1.0,
    factor: float = 4.0,
    before_s: float = 1800.0,
    rise_s: float = 120.0,
    hold_s: float = 2400.0,
    fall_s: float = 120.0,
    after_s: float = 2760.0,
) -> Knots:
    """The base for ``before_s``, up to ``factor`` x base within ``rise_s``, held
    ``hold_s``, down within ``fall_s``, the base for ``after_s`` (2 hours in all)."""
    _positive("base_rps", base_rps)
    _factor(factor)
    for name, v in (("before_s", before_s), ("hold_s", hold_s), ("after_s", after_s)):
        _positive(name, v)
    _positive("rise_s", rise_s, allow_zero=True)
    _positive("fall_s", fall_s, allow_zero=True)
    peak = factor * base_rps
    t1 = before_s
    t2 = t1 + rise_s
    t3 = t2 + hold_s
    t4 = t3 + fall_s
    return (
        (0.0, base_rps),
        (t1, base_rps),
        (t2, peak),
        (t3, peak),
        (t4, base_rps),
        (t4 + after_s, base_rps),
    )


def periodic_bursts(
    *,
    base_rps: float = 1.0,
    factor: float = 3.0,
    period_s: float = 3600.0,
    burst_s: float = 600.0,
    offset_s: float = 1800.0,
    periods: int = 24,
) -> Knots:
    """``periods`` periods of ``period_s``, each the base with one burst of ``factor``
    x base for ``burst_s`` starting ``offset_s`` into it (edges within a step:
    a burst arrives at once)."""
    _positive("base_rps", base_rps)
    _factor(factor)
    _positive("period_s", period_s)
    _positive("burst_s", burst_s)
    _positive("offset_s", offset_s, allow_zero=True)
    if not 1 <= periods <= 10_000:
        raise BadInputError(f"periods = {periods!r}: must be 1 to 10000. Fix: e.g. 24.")
    if offset_s + burst_s > period_s:
        raise BadInputError(
            f"offset_s + burst_s = {offset_s + burst_s:g} s: the burst must end within its "
            f"period ({period_s:g} s). Fix: a shorter burst or an earlier offset."
        )
    peak = factor * base_rps
    knots: list[tuple[float, float]] = [(0.0, base_rps)]
    for k in range(periods):
        on = k * period_s + offset_s
        off = on + burst_s
        # Two knots at one time are a jump: the curve is the later one's from then on.
        knots += [(on, base_rps), (on, peak), (off, peak), (off, base_rps)]
    knots.append((periods * period_s, base_rps))
    return tuple(knots)


def plateau_drop(
    *,
    base_rps: float = 1.0,
    factor: float = 3.0,
    plateau_s: float = 10800.0,
    fall_s: float = 60.0,
    after_s: float = 3600.0,
) -> Knots:
    """``factor`` x base for ``plateau_s``, down to the base within ``fall_s``,
    the base for ``after_s``."""
    _positive("base_rps", base_rps)
    _factor(factor)
    _positive("plateau_s", plateau_s)
    _positive("fall_s", fall_s, allow_zero=True)
    _positive("after_s", after_s)
    peak = factor * base_rps
    t1 = plateau_s
    t2 = t1 + fall_s
    return ((0.0, peak), (t1, peak), (t2, base_rps), (t2 + after_s, base_rps))


def night_at_zero(
    *,
    base_rps: float = 1.0,
    day_start_s: float = 8 * 3600.0,
    day_end_s: float = 20 * 3600.0,
    ramp_s: float = 1800.0,
    days: int = 2,
) -> Knots:
    """No load until ``day_start_s`` after each midnight, up to the base within
    ``ramp_s``, the base until ``ramp_s`` before ``day_end_s``, down to none at it,
    none until midnight; ``days`` days."""
    _positive("base_rps", base_rps)
    _positive("ramp_s", ramp_s, allow_zero=True)
    if not (0 <= day_start_s and day_start_s + 2 * ramp_s <= day_end_s <= 86400.0):
        raise BadInputError(
            f"day_start_s = {day_start_s!r}, day_end_s = {day_end_s!r}, ramp_s = {ramp_s!r}: "
            "the day must fit both ramps between midnight and midnight. Fix: e.g. 28800, "
            "72000 and 1800."
        )
    if not (isinstance(days, int) and days >= 1):
        raise BadInputError(f"days = {days!r}: must be a whole number of at least 1. Fix: e.g. 2.")
    knots: list[tuple[float, float]] = [(0.0, 0.0)]
    for d in range(days):
        o = d * 86400.0
        knots += [
            (o + day_start_s, 0.0),
            (o + day_start_s + ramp_s, base_rps),
            (o + day_end_s - ramp_s, base_rps),
            (o + day_end_s, 0.0),
        ]
    knots.append((days * 86400.0, 0.0))
    return tuple(knots)


# The shapes by name, each with its defaults.
SHAPES: dict[str, Callable[[], Knots]] = {
    "flash-crowd": flash_crowd,
    "periodic-bursts": periodic_bursts,
    "plateau-drop": plateau_drop,
}
# Shapes with idle hours, for scale to zero; apart from SHAPES,
# whose rows benchmarks/stress.py prints and docs/benchmarks.md quotes.
ZERO_SHAPES: dict[str, Callable[[], Knots]] = {
    "night-at-zero": night_at_zero,
}


def _area(knots: Knots, t: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    """The integral of the piecewise-linear curve from its start to each ``t`` (exact)."""
    kt = np.array([k[0] for k in knots], dtype=np.float64)
    kr = np.array([k[1] for k in knots], dtype=np.float64)
    dt = np.diff(kt)
    seg = 0.5 * (kr[:-1] + kr[1:]) * dt
    cum = np.concatenate([[0.0], np.cumsum(seg)])
    # The segment holding each t; a jump (dt 0) is never chosen, since
    # side="right" lands past knots at the same time.
    j = np.clip(np.searchsorted(kt, t, side="right") - 1, 0, len(kt) - 2)
    x = t - kt[j]
    slope = np.divide(kr[j + 1] - kr[j], dt[j], out=np.zeros_like(x), where=dt[j] > 0)
    return np.asarray(cum[j] + kr[j] * x + 0.5 * slope * x * x, dtype=np.float64)


def rates(knots: Sequence[tuple[float, float]], step_s: float) -> npt.NDArray[np.float64]:
    """The mean rate of the curve over each step of ``step_s`` (a last partial step
    is dropped), the series ``engine.simulate`` runs on."""
    k = tuple((float(t), float(r)) for t, r in knots)
    _positive("step_s", step_s)
    if len(k) < 2:
        raise BadInputError("a shape needs at least two knots. Fix: give a start and an end.")
    times = [t for t, _ in k]
    if any(b < a for a, b in pairwise(times)) or times[0] != 0.0:
        raise BadInputError(
            "knot times must start at 0 and never decrease. Fix: sort the knots by time."
        )
    if not all(math.isfinite(r) and r >= 0 for _, r in k) or not math.isfinite(times[-1]):
        raise BadInputError("knot rates must be finite and at least 0. Fix: check the shape.")
    n = math.floor(times[-1] / step_s + 1e-9)
    if n < 1:
        raise BadInputError(
            f"the shape lasts {times[-1]:g} s, less than one step of {step_s:g} s. "
            "Fix: a shorter step or a longer shape."
        )
    edges = np.arange(n + 1, dtype=np.float64) * step_s
    return np.diff(_area(k, edges)) / step_s


def shape_rates(name: str, step_s: float, base_rps: float = 1.0) -> npt.NDArray[np.float64]:
    """A named shape with its defaults, at ``base_rps``, on steps of ``step_s``."""
    known = {**SHAPES, **ZERO_SHAPES}
    if name not in known:
        raise BadInputError(
            f"stress shape {name!r}: unknown. Fix: one of {', '.join(sorted(known))}."
        )
    return rates(known[name](), step_s) * base_rps
