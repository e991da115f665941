"""The fleet floor (research/floor.py): exact on small cases, and below every simulated fleet."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from research.floor import constant_fleet, fleet_floor, step_needs
from simhelp import CONCURRENCY, METRICS, load, params

from ecs_gpu.sim.engine import simulate

# One task per g5.xlarge instance, 2 req/s a task at full load.
TINY = params(max_tasks=3, max_instances=3).with_(managed_scaling={"cpr_low_datapoints": 2})


def _brute(needs_per_minute: list[list[int]], low_run: int, n_max: int, budget: int) -> float:
    """The least GPU-hours over every schedule the floor's rules allow, by enumeration.

    Per minute a count and whether its CPR sample is low (an instance empty,
    one instance's tasks short the whole minute: the model load is 60 s). A
    count may rise only on a minute that is not low, and fall only on a low
    minute with the streak (this one included) at ``low_run``.
    """
    best = math.inf
    choices = [(n, low) for n in range(n_max + 1) for low in (False, True)]
    for plan in itertools.product(choices, repeat=len(needs_per_minute)):
        for start in range(n_max + 1):
            prev, streak, ok, over = start, low_run, True, 0
            for (n, low), needs in zip(plan, needs_per_minute, strict=True):
                if low:
                    # Keeps the count, or falls with the streak complete.
                    streak = min(streak + 1, low_run)
                    # At 0 instances there is none to leave empty; a fall to 0 is fine.
                    if n > prev or prev == 0 or (n < prev and streak < low_run):
                        ok = False
                        break
                    cap = n if n < prev else n - 1
                else:
                    if n < prev:
                        ok = False
                        break
                    streak, cap = 0, n
                over += sum(1 for x in needs if x > cap)
                prev = n
            if ok and over <= budget:
                best = min(best, sum(n for n, _ in plan) / 60.0)
    return best


@pytest.mark.parametrize(
    ("needs", "budget"),
    [
        # A spike held briefly: the count stays up for the low streak after it.
        ([[1] * 6, [3] * 6, [1] * 6, [1] * 6, [1] * 6], 0),
        # The same with room for the spike's steps: cheaper to leave it.
        ([[1] * 6, [3] * 6, [1] * 6, [1] * 6, [1] * 6], 6),
        # One step of need 3 per minute: the budget buys two of them.
        ([[0, 0, 0, 0, 0, 3], [2] * 6, [0] * 5 + [3], [1] * 6], 2),
        ([[2] * 6, [0] * 6, [0] * 6, [2] * 6, [0] * 6], 0),
    ],
)
def test_floor_brackets_the_exact_optimum_on_small_cases(
    needs: list[list[int]], budget: int
) -> None:
    rates = [2.0 * x for minute in needs for x in minute]
    f = fleet_floor(TINY, rates, 10.0, budget)
    exact = _brute(needs, 2, 3, budget)
    assert f.lower_gpu_hours <= exact + 1e-9
    assert f.fleet_gpu_hours == pytest.approx(exact)
    assert f.fleet_overload_steps <= budget


def test_the_dual_is_tight_where_overload_costs_nothing_or_everything() -> None:
    needs = [[1] * 6, [3] * 6, [1] * 6, [1] * 6, [1] * 6]
    rates = [2.0 * x for minute in needs for x in minute]
    # Everything served: the spike's 3 held for the 2-minute streak, then 2, then 1.
    f = fleet_floor(TINY, rates, 10.0, 0)
    assert f.lower_gpu_hours == pytest.approx(f.fleet_gpu_hours)
    assert f.fleet_gpu_hours == pytest.approx(_brute(needs, 2, 3, 0))


def test_an_instance_cannot_leave_before_the_low_streak() -> None:
    # 3 instances for a minute, then nothing: with a 2-sample streak the count holds
    # 2 more minutes (one instance short each) before it may fall.
    needs = [[3] * 6] + [[0] * 6] * 4
    rates = [2.0 * x for minute in needs for x in minute]
    f = fleet_floor(TINY, rates, 10.0, 0)
    # 3 (served) + 3 + 3 (the low streak; the second falls to 0 at its sample) = 3 + 3 + 0.
    assert f.fleet_gpu_hours == pytest.approx(_brute(needs, 2, 3, 0))
    assert f.fleet_gpu_hours > 3 / 60.0  # more than the oracle's one minute


def test_step_needs_are_full_load_tasks() -> None:
    assert step_needs(TINY, [0.0, 2.0, 2.1, 6.0]).tolist() == [0, 1, 2, 3]


@pytest.mark.parametrize(
    "design",
    [
        params(max_tasks=16, max_instances=16),
        params(service=METRICS, scaling=CONCURRENCY, max_tasks=16, max_instances=16),
        params(
            service=METRICS,
            scaling=CONCURRENCY + "\nfast_scale_in = true",
            max_tasks=16,
            max_instances=16,
        ),
    ],
    ids=["gpu", "concurrency", "fast-scale-in"],
)
def test_no_simulated_fleet_pays_less_than_the_floor_for_its_overload(design: object) -> None:
    p = design  # type: ignore[assignment]
    # A base, a burst it must chase, a fall and a second burst: two hours.
    rates = load((1800, 6.0), (600, 24.0), (1800, 4.0), (300, 20.0), (2700, 6.0))
    r = simulate(p, rates, step_s=10.0, seed=0)  # type: ignore[arg-type]
    steps = round(r.summary["overload_seconds"] / 10.0)
    f = fleet_floor(p, rates, 10.0, steps)  # type: ignore[arg-type]
    assert 0 < f.lower_gpu_hours <= r.summary["gpu_hours"]
    # The floor's own fleet is within the same overload, and no dearer than the run.
    assert f.fleet_overload_steps <= steps
    assert f.fleet_gpu_hours <= r.summary["gpu_hours"]
    # It is no oracle: serving every step, it pays more than each step's full-load
    # need, because the instances wait out the low streak after each burst.
    served = fleet_floor(p, rates, 10.0, 0)  # type: ignore[arg-type]
    each_step = float(step_needs(p, rates).sum()) * 10.0 / 3600.0  # type: ignore[arg-type]
    assert served.lower_gpu_hours > each_step * 1.05
    assert np.isfinite(served.fleet_gpu_hours)


def test_the_constant_fleet_is_the_one_the_simulator_runs_with_min_equal_to_max() -> None:
    # Bursts of 4 tasks' full load over a base of 1: with 2 steps allowed the fleet
    # must hold 4 instances; with the bursts' 6 steps allowed, 2 (the base's 1.5).
    rates = load((600, 3.0), (30, 8.0), (600, 3.0), (30, 8.0), (600, 3.0))
    p = params(max_tasks=8, max_instances=8)
    tight = constant_fleet(p, rates, 10.0, 2)
    loose = constant_fleet(p, rates, 10.0, 6)
    assert tight is not None and (tight.instances, tight.overload_steps) == (4, 0)
    assert loose is not None and (loose.instances, loose.overload_steps) == (2, 6)
    for fleet in (tight, loose):
        n = fleet.instances
        held = params(min_tasks=n, max_tasks=n, min_instances=n, max_instances=n)
        r = simulate(held, rates, step_s=10.0, seed=0)
        assert r.summary["overload_seconds"] == fleet.overload_steps * 10.0
        assert r.summary["gpu_hours"] == pytest.approx(fleet.gpu_hours, abs=1e-4)  # rounded
        # And no fleet the floor's rules allow pays less for that overload.
        assert fleet_floor(p, rates, 10.0, fleet.overload_steps).lower_gpu_hours <= (
            fleet.gpu_hours + 1e-9
        )
    # Beyond max_instances nothing fits.
    assert constant_fleet(params(max_tasks=2, max_instances=2), rates, 10.0, 0) is None
