"""The fast scale-in on the engine (controllers.fast_scale_in.FastScaleInLayer).

A step policy on a 10-second low alarm over per-task concurrency on one task
fewer (ecs_gpu.design.paths.fast_scale_in): hand-made loads with exact arrivals, so the
desired counts and the times they change are exact.
"""

from __future__ import annotations

import numpy as np
from simhelp import CONCURRENCY, METRICS, STEP, params

from ecs_gpu.sim.engine import simulate
from ecs_gpu.sim.params import SimParams

ON = CONCURRENCY + "\nfast_scale_in = true"


def _p(scaling: str = ON, **kw: object) -> SimParams:
    return params(max_instances=8, max_tasks=8, scaling=scaling, service=METRICS, **kw)


def _changes(p: SimParams, rates: np.ndarray) -> list[tuple[float, int]]:
    tl = simulate(p, rates, step_s=STEP, noisy_arrivals=False).timeline
    out: list[tuple[float, int]] = []
    for t, d in zip(tl["t_s"], tl["desired_tasks"], strict=True):
        if not out or out[-1][1] != d:
            out.append((t, int(d)))
    return out


def test_a_drop_steps_down_to_need_in_under_six_minutes() -> None:
    # Eight tasks at the 11.2 target (1.4 req/s each), then 2.6 req/s: 20.8 requests in
    # service, which need 2 tasks at the target.
    p = _p()
    rates = np.concatenate([np.full(60, 8 * 1.4), np.full(90, 2.6)])
    # The drop at 600 s; 12 low 10-s datapoints, the last visible 5 s after its
    # period: the first step at 600 + 130 s, then one a minute (the cooldown and
    # the once-a-minute invocation). Each: one task fewer reads 20.8 / (n - 1).
    assert _changes(p, rates) == [
        (0.0, 8),
        (730.0, 6),  # 20.8 / 7 = 2.97 < 0.75 x 11.2: -25 % of 8
        (790.0, 5),  # 20.8 / 5 = 4.16: -25 % of 6 rounds to 1
        (850.0, 4),  # 5.2
        (910.0, 3),  # 6.93
        (970.0, 2),  # 10.4, 0-10 % under the target: one task
    ]  # 20.8 / 1 = 20.8 >= 11.2: two stay, the need; target tracking's 15 minutes are not up


def test_without_it_target_tracking_waits_fifteen_minutes() -> None:
    p = _p(CONCURRENCY)  # the default: off
    rates = np.concatenate([np.full(60, 8 * 1.4), np.full(150, 2.6)])
    changes = _changes(p, rates)
    assert changes[0] == (0.0, 8)
    assert changes[1][0] - 600.0 >= 15 * 60


def test_a_load_at_the_target_on_one_task_fewer_is_not_scaled_in() -> None:
    # 2.8 req/s = 22.4 in service: at 3 tasks, one fewer reads exactly the target.
    p = _p()
    rates = np.concatenate([np.full(60, 8 * 1.4), np.full(90, 2.8)])
    assert _changes(p, rates)[-1] == (910.0, 3)


def test_shared_cooldown_what_if_holds_the_step_after_a_target_tracking_scale_in() -> None:
    p = _p().with_(tracking={"shared_scale_in_cooldown": True})
    fsi = p.fast_scale_in
    assert fsi is not None
    changes = _changes(p, np.concatenate([np.full(60, 8 * 1.4), np.full(90, 2.6)]))
    # Each step now also starts target tracking's 300-s scale-in cooldown, which holds
    # the next step: one step per five minutes instead of per minute.
    assert changes[:3] == [(0.0, 8), (730.0, 6), (1030.0, 5)]


def _instance_changes(p: SimParams, rates: np.ndarray) -> list[tuple[float, int]]:
    tl = simulate(p, rates, step_s=STEP, noisy_arrivals=False).timeline
    out: list[tuple[float, int]] = []
    for t, n in zip(tl["t_s"], tl["instances"], strict=True):
        if not out or out[-1][1] != n:
            out.append((t, int(n)))
    return out


def test_the_emptied_instances_leave_after_the_cpr_low_alarm() -> None:
    # The tasks are down to 2 at 970 s (above); managed scaling removes the
    # empty instances only after its 15 low minutes, and in the what-if
    # (ManagedScaling.cpr_low_datapoints, never from a spec) after 30.
    rates = np.concatenate([np.full(60, 8 * 1.4), np.full(360, 2.6)])
    aws = _instance_changes(_p(), rates)
    what_if = _instance_changes(_p().with_(managed_scaling={"cpr_low_datapoints": 30}), rates)
    assert aws[0] == what_if[0] == (0.0, 8)
    first_aws, first_what_if = aws[1][0], what_if[1][0]
    assert 730.0 + 15 * 60 <= first_aws < 730.0 + 17 * 60
    assert first_what_if - first_aws == 15 * 60
    assert aws[-1][1] == what_if[-1][1] == 2
