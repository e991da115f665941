"""A crowd or a blip (research/blip.py): the floor, the blip, and the floor against the engine."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
import pytest
from research.blip import blip, blip_floor
from research.stress import flash_crowd, rates
from simhelp import CONCURRENCY, ISSUE8, METRICS, STEP, params, same_until

from ecs_gpu.errors import BadInputError
from ecs_gpu.sim.engine import simulate
from ecs_gpu.sim.params import SimParams

# 2 tasks at the concurrency target (1.4 req/s a task), then x8 at once for an
# hour: 22.4 req/s, 12 tasks at full load (2 req/s a task).
BASE, FACTOR, AT = 2 * 1.4, 8.0, 1200.0
CROWD = flash_crowd(
    base_rps=BASE, factor=FACTOR, before_s=AT, rise_s=0.0, hold_s=3600.0, fall_s=0.0, after_s=600.0
)
POOL = "[capacity.warm_pool]\nmin_size = 2\nmax_prepared = 16"


# The counts two runs of one prefix share.
SAME = ("desired_tasks", "ready_tasks", "instances")


def _design(scaling: str, service: str = METRICS, capacity: str = "") -> SimParams:
    return params(
        service=service,
        scaling=scaling,
        capacity=capacity,
        max_tasks=16,
        max_instances=16,
        min_tasks=1,
    )


def test_the_floor_is_the_fewest_instances_that_serve_a_step_held_15_minutes() -> None:
    p = params(max_tasks=16, max_instances=16)  # 2 req/s a task at full load
    rps = np.concatenate((np.full(90, 1.0), np.full(200, 30.0)))  # 15 tasks from 900 s
    f = blip_floor(p, rps, STEP, 900.0, 12)
    # The 13th step from the jump (1,020 s) starts minute 17; 15 instances x 15 minutes.
    assert (f.instances, f.split_s, f.held_minutes) == (15, 1020.0, 15)
    assert f.gpu_hours == pytest.approx(15 * 15 / 60)
    # The last step the budget allows starts its own minute's second step: the same split.
    assert blip_floor(p, rps, STEP, 900.0, 13).split_s == 1020.0
    assert blip_floor(p, rps, STEP, 900.0, 5).split_s == 900.0
    # The fewest over the window: one served step of the smallest need is enough.
    ramp = np.concatenate((np.full(90, 1.0), np.full(3, 10.0), np.full(200, 30.0)))
    assert blip_floor(p, ramp, STEP, 900.0, 6).instances == 5
    assert blip_floor(p, ramp, STEP, 900.0, 2).instances == 5
    # The jump's own step is in the window.
    one = np.concatenate((np.full(90, 1.0), np.full(1, 10.0), np.full(200, 30.0)))
    assert blip_floor(p, one, STEP, 900.0, 3).instances == 5


def test_two_tasks_an_instance_halve_the_instances() -> None:
    p = params(instance="g5.12xlarge", max_tasks=16, max_instances=8)  # 4 GPUs, 4 tasks each
    rps = np.concatenate((np.full(90, 1.0), np.full(200, 30.0)))
    f = blip_floor(p, rps, STEP, 900.0, 0)
    assert f.instances == 4  # 15 tasks on 4-task instances
    assert f.gpu_hours == pytest.approx(4 * 4 * 15 / 60)


@pytest.mark.parametrize(
    ("at", "budget", "match"),
    [
        (600.0, 3, "at least 15 minutes in"),
        (905.0, 3, "on a step"),
        (900.0, 500, "last past the budget"),
        (900.0, -1, "budget at least 0"),
    ],
)
def test_a_crowd_the_argument_does_not_hold_on_is_bad_input(
    at: float, budget: int, match: str
) -> None:
    p = params(max_tasks=16, max_instances=16)
    rps = np.concatenate((np.full(90, 1.0), np.full(200, 30.0)))
    with pytest.raises(BadInputError, match=match):
        blip_floor(p, rps, STEP, at, budget)


def test_a_crowd_no_fleet_serves_is_bad_input() -> None:
    p = params(max_tasks=4, max_instances=4)
    rps = np.concatenate((np.full(90, 1.0), np.full(200, 30.0)))
    with pytest.raises(BadInputError, match="above max_tasks 4"):
        blip_floor(p, rps, STEP, 900.0, 3)


def test_spot_is_refused() -> None:
    p = params(max_tasks=16, max_instances=16).with_(spot={"percent": 50})
    rps = np.concatenate((np.full(90, 1.0), np.full(200, 30.0)))
    with pytest.raises(BadInputError, match="spot_percent"):
        blip_floor(p, rps, STEP, 900.0, 3)


def test_the_blip_is_the_crowd_until_the_split_then_the_base_for_15_minutes() -> None:
    p = _design(CONCURRENCY)
    crowd = rates(CROWD, STEP)
    f = blip_floor(p, crowd, STEP, AT, 30)  # the 31st step, 1,500 s: minute 25
    assert f.split_s == 1500.0
    b = rates(blip(CROWD, f, BASE), STEP)
    assert np.array_equal(crowd[:150], b[:150])
    assert np.allclose(b[150:], BASE) and len(b) == 150 + 90


@pytest.mark.parametrize(
    ("service", "scaling", "capacity"),
    [
        ("", "", ""),  # the GPU signal
        (METRICS, ISSUE8, ""),  # issue 8's default, the bound's design
        (METRICS, CONCURRENCY, ""),  # issue 16's default
        (METRICS, CONCURRENCY + "\nfast_scale_in = true", ""),
        (METRICS, CONCURRENCY, POOL),
    ],
)
def test_no_design_pays_less_on_the_blip_than_the_floor_of_its_own_overload(
    service: str, scaling: str, capacity: str
) -> None:
    p = _design(scaling, service, capacity)
    crowd = rates(CROWD, STEP)
    a = simulate(p, crowd, step_s=STEP, seed=0)
    budget = round(a.summary["overload_seconds"] / STEP)
    f = blip_floor(p, crowd, STEP, AT, min(budget, len(crowd) - round(AT / STEP) - 1))
    b = simulate(p, rates(blip(CROWD, f, BASE), STEP), step_s=STEP, seed=0)
    # Causal: the same counts until the blip leaves the crowd, and the instances
    # of the split's own step (its minute's count was decided before it).
    n = round(f.split_s / STEP)
    assert same_until(a, b, n, SAME)
    assert a.timeline["instances"][n] == b.timeline["instances"][n]
    assert f.instances == 12
    assert b.summary["gpu_hours"] >= f.gpu_hours


def test_the_floor_is_what_a_fleet_that_served_the_crowd_in_time_pays() -> None:
    # Issue 8's design serves the crowd within its own overload, so on the blip it
    # holds its instances 15 minutes: the floor is close to what it pays there.
    p = _design(ISSUE8)
    crowd = rates(CROWD, STEP)
    a = simulate(p, crowd, step_s=STEP, seed=0)
    f = blip_floor(p, crowd, STEP, AT, round(a.summary["overload_seconds"] / STEP))
    b = simulate(p, rates(blip(CROWD, f, BASE), STEP), step_s=STEP, seed=0)
    # The blip's 15 minutes after the split hold every instance it had in the crowd.
    after: npt.NDArray[np.float64] = np.asarray(b.timeline["instances"])[round(f.split_s / STEP) :]
    assert len(after) == 90 and after.min() >= f.instances == 12
