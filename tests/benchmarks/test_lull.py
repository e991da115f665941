"""A lull or a fall (research/lull.py): the shape, the floor, and the floor against the engine."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
import pytest
from research.lull import lull, overload_floor, rate_before
from research.stress import plateau_drop, rates
from simhelp import CONCURRENCY, ISSUE8, METRICS, STEP, params, same_until

from ecs_gpu.errors import BadInputError
from ecs_gpu.sim.engine import SimResult, simulate
from ecs_gpu.sim.params import SimParams
from ecs_gpu.sim.transients import NEED_WITHIN_S, drops_to_need, need_per_step

# 8 tasks at the concurrency target (1.4 req/s a task: 11.2 over 8 s), then 2.
HIGH, LOW = 8 * 1.4, 2 * 1.4
FALL = plateau_drop(base_rps=LOW, factor=HIGH / LOW, plateau_s=3600.0, fall_s=0.0, after_s=3600.0)
HOLD = CONCURRENCY
FAST = CONCURRENCY + "\nfast_scale_in = true"


# The counts two runs of one prefix share.
SAME = ("desired_tasks", "ready_tasks", "arrivals_rps")


def _design(scaling: str, *, poisson: bool = False) -> SimParams:
    return params(
        service=METRICS, scaling=scaling, max_tasks=8, max_instances=8, min_tasks=1
    ).with_(poisson_arrivals=poisson)


def _run(scaling: str, rps: npt.NDArray[np.float64], *, poisson: bool = False) -> SimResult:
    return simulate(_design(scaling, poisson=poisson), rps, step_s=STEP, seed=0)


def test_a_lull_is_the_load_until_it_comes_back() -> None:
    back = lull(FALL, 3900.0, HIGH, 600.0)
    a, b = rates(FALL, STEP), rates(back, STEP)
    assert np.array_equal(a[:390], b[:390])
    assert np.allclose(b[390:], HIGH) and len(b) == 450


def test_a_lull_inside_a_ramp_starts_where_the_ramp_is() -> None:
    ramp = plateau_drop()  # 3 -> 1 within a minute from 10,800 s
    assert rate_before(ramp, 10830.0) == pytest.approx(2.0)
    a, b = rates(ramp, STEP), rates(lull(ramp, 10830.0, 3.0, 60.0), STEP)
    assert np.allclose(a[:1083], b[:1083]) and np.allclose(b[1083:], 3.0)


def test_a_time_outside_the_shape_is_bad_input() -> None:
    with pytest.raises(BadInputError, match=r"t = 99999"):
        rate_before(FALL, 99999.0)
    with pytest.raises(BadInputError, match="hold_s"):
        lull(FALL, 3900.0, HIGH, 0.0)


def test_the_floor_is_the_model_load_on_tasks_too_few_for_the_rise() -> None:
    p = params()  # 2 req/s a task at full load, a 60-s model load
    rps = np.full(100, 10.0)
    # Need 3 -> at most 3 tasks (3.3), 6 req/s, under 10: six 10-s steps.
    f = overload_floor(p, rps, STEP, 500.0, 3)
    assert (f.most_tasks, f.start_s, f.overload_floor_s) == (3, 60.0, 60.0)
    # A rise they still serve at full load forces nothing.
    assert overload_floor(p, np.full(100, 6.0), STEP, 500.0, 3).overload_floor_s == 0.0
    # The load's end cuts the window.
    assert overload_floor(p, rps, STEP, 960.0, 3).overload_floor_s == 30.0
    # The band counts: need 10 allows 11 tasks, which serve 22 req/s at full load.
    f = overload_floor(p, np.full(100, 21.0), STEP, 500.0, 10)
    assert (f.most_tasks, f.overload_floor_s) == (11, 0.0)
    assert overload_floor(p, np.full(100, 23.0), STEP, 500.0, 10).overload_floor_s == 60.0
    with pytest.raises(BadInputError, match="decided_at_s = 990"):
        overload_floor(p, rps, STEP, 990.0, 3)


def test_spot_is_refused() -> None:
    p = params().with_(spot={"percent": 50})
    with pytest.raises(BadInputError, match="spot_percent"):
        overload_floor(p, np.full(10, 1.0), STEP, 0.0, 1)


@pytest.mark.parametrize("scaling", [HOLD, FAST])
def test_no_design_has_less_overload_on_its_lull_than_the_floor(scaling: str) -> None:
    fall = rates(FALL, STEP)
    a = _run(scaling, fall)
    (drop,) = drops_to_need(a.params, fall, a.timeline["desired_tasks"], STEP)
    assert drop.to_need_s is not None
    s = drop.at_s + drop.to_need_s
    back = rates(lull(FALL, s + STEP, HIGH, 3600.0), STEP)
    b = _run(scaling, back)
    n = round(s / STEP) + 1
    # Causal: the same desired and ready counts until the lull comes back.
    assert same_until(a, b, n, SAME)
    need = int(need_per_step(a.params, fall, STEP)[n - 1])
    floor = overload_floor(a.params, back, STEP, s, need)
    assert floor.overload_floor_s == 60.0
    assert b.summary["overload_seconds"] >= floor.overload_floor_s


@pytest.mark.parametrize("scaling", [ISSUE8, HOLD])
def test_a_design_that_holds_its_tasks_has_no_overload_on_any_lull_the_goal_forces(
    scaling: str,
) -> None:
    # Issue 8's default (the overload bound's design) and issue 16's: target
    # tracking's 15 low datapoints keep every task through the 5 minutes.
    fall = rates(FALL, STEP)
    p = _design(scaling)
    need = need_per_step(p, fall, STEP)
    for s in np.arange(3600.0, 3600.0 + NEED_WITHIN_S + 1, STEP):
        back = rates(lull(FALL, float(s) + STEP, HIGH, 3600.0), STEP)
        floor = overload_floor(p, back, STEP, float(s), int(need[round(s / STEP)]))
        assert floor.overload_floor_s == 60.0
        assert _run(scaling, back).summary["overload_seconds"] == 0.0


def test_poisson_arrivals_keep_the_engine_causal() -> None:
    # Without boot jitter (drawn after the whole load's arrivals: docs/simulator.md
    # "Commands", --seed), a run's steps before the lull comes back are the drop's.
    fall = rates(FALL, STEP)
    back = rates(lull(FALL, 3900.0, HIGH, 3600.0), STEP)
    a, b = _run(FAST, fall, poisson=True), _run(FAST, back, poisson=True)
    assert same_until(a, b, 390, SAME)


def test_a_fast_path_scale_out_that_ends_the_scale_in_cooldown_is_undone() -> None:
    # The what-if TargetTracking.fast_path_ends_scale_in_cooldown (benchmarks/lull.py's
    # last table): 25 tasks' load, then 9, then back on the lull of the first step
    # within 10 % of need. Target tracking scaled in just before the rise; once the
    # fast path's scale-out ends that cooldown, its next minute's scale-in, from a
    # low datapoint still in its alarm, removes the fast path's tasks.
    high, low = 25 * 1.4, 9 * 1.4
    fall_knots = plateau_drop(
        base_rps=low, factor=high / low, plateau_s=3600.0, fall_s=0.0, after_s=3600.0
    )
    p = params(service=METRICS, scaling=HOLD, max_tasks=32, max_instances=32, min_tasks=1)
    fall = rates(fall_knots, STEP)
    a = simulate(p, fall, step_s=STEP, seed=0)
    (drop,) = drops_to_need(p, fall, a.timeline["desired_tasks"], STEP)
    assert drop.to_need_s is not None
    back = rates(lull(fall_knots, drop.at_s + drop.to_need_s + STEP, high, 3600.0), STEP)
    kept = simulate(p, back, step_s=STEP, seed=0).summary["overload_seconds"]
    what_if = p.with_(tracking={"fast_path_ends_scale_in_cooldown": True})
    ended = simulate(what_if, back, step_s=STEP, seed=0)
    assert kept == 90.0 and ended.summary["overload_seconds"] > 5 * kept
    # The fast path's tasks were set, then taken away within the minute.
    desired = np.asarray(ended.timeline["desired_tasks"])
    rise = round((drop.at_s + drop.to_need_s) / STEP) + 1
    assert desired[rise : rise + 6].max() > 20 and desired[rise + 6 : rise + 30].max() < 12
