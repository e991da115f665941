"""Scale to zero on the night-at-zero shape (research.stress, the load scale_to_zero.py runs).

Two days with no load from 20:00 to 08:00 UTC: the wake path, the sleep path, the
schedule, and what the first request after a night waits.
"""

from __future__ import annotations

import numpy as np
import pytest
from research.stress import shape_rates

from ecs_gpu.design.paths import sleep, wake
from ecs_gpu.sim import params as P
from ecs_gpu.sim.engine import simulate
from ecs_gpu.sim.params import SimParams, from_spec
from ecs_gpu.spec import Spec, parse_spec
from example_specs import G5

STEP = 10.0
LB = '\n[load_balancer]\nscheme = "internal"\n'
POOL = "\n[capacity.warm_pool]\nmin_size = 1\n"
ZERO = G5.replace("min_tasks = 1", "min_tasks = 0").replace(
    "min_instances = 1", "min_instances = 0"
)
# The latest the model acts on a request at zero: the ALB's minute, its datapoint's
# lag (alb_metric_delay_s), then the CapacityProviderReservation's lag (cpr_delay_s)
# and its one-minute alarm; each a minute here.
DETECTION_BOUND_S = 4 * P.ALARM_PERIOD_S


def _spec(text: str) -> Spec:
    return parse_spec(text, "z.toml")


def _night(p: SimParams, tasks: float = 3.0) -> np.ndarray:
    return shape_rates("night-at-zero", STEP, base_rps=tasks * p.rps_per_task_at_target)


def test_a_request_at_zero_waits_the_start_and_the_detection_and_no_longer() -> None:
    spec = _spec(ZERO + LB)
    p = from_spec(spec)
    assert p.wake is not None and not p.tracking.cpu_scale_in
    s = simulate(p, _night(p), step_s=STEP, seed=1).summary
    # Two mornings after two nights at zero: two waits, each one start plus detection.
    waits = s["cold_start_waits_s"]
    # One wake each: the cooldown outlasts the minutes the alarm still reads "no task".
    assert len(waits) == 2 and s["wake_scale_outs"] == 2
    start_max = p.instance_boot_s * (1 + p.boot_jitter_fraction) + p.image_pull_s + p.model_load_s
    assert wake.start_s(spec) == pytest.approx(p.instance_boot_s + p.image_pull_s + p.model_load_s)
    for w in waits:
        assert wake.start_s(spec) * (1 - 0.2) < w <= start_max + DETECTION_BOUND_S + STEP
    assert s["waiting_at_end_s"] is None


def test_idle_nights_cost_only_the_scale_in_tails() -> None:
    ref = from_spec(_spec(G5))
    zero = from_spec(_spec(ZERO + LB))
    r = simulate(ref, _night(ref), step_s=STEP, seed=1)
    z = simulate(zero, _night(zero), step_s=STEP, seed=1).summary
    # 24 idle hours; the kept task's instance bills them all without scale to zero.
    assert z["idle_hours"] == 24.0
    tl = r.timeline
    idle_instances = [n for n, v in zip(tl["instances"], tl["offered_rps"], strict=True) if v == 0]
    ref_idle = sum(idle_instances) * STEP / 3600
    assert ref_idle >= 24.0
    # At zero only target tracking's and managed scaling's 15-minute low alarms
    # (plus cooldowns) bill after each evening: under an hour a night.
    assert 0 < z["idle_gpu_hours"] < 2 * 1.0
    assert z["gpu_hours"] < r.summary["gpu_hours"] - 20


def test_a_warm_pool_shortens_the_wait_to_the_pooled_start() -> None:
    cold = from_spec(_spec(ZERO + LB))
    spec = _spec(ZERO + LB + POOL)
    pooled = from_spec(spec)
    assert wake.pooled_wake(spec)
    wc = simulate(cold, _night(cold), step_s=STEP, seed=1).summary["cold_start_waits_s"]
    wp = simulate(pooled, _night(pooled), step_s=STEP, seed=1).summary["cold_start_waits_s"]
    assert len(wp) == 2
    for w in wp:
        assert w <= wake.start_s(spec) + DETECTION_BOUND_S + STEP
    assert max(wp) < min(wc)


def test_the_cpu_policy_with_scale_in_would_hold_the_last_task() -> None:
    # Target tracking alone: the sleep path's step scale-in is not blocked by it (§9)
    # and would end the night whatever the CPU policy reads.
    p = from_spec(_spec(ZERO + LB)).with_(sleep=None)
    held = simulate(
        p.with_(tracking={"cpu_scale_in": True}), _night(p), step_s=STEP, seed=1
    ).summary
    zero = simulate(p, _night(p), step_s=STEP, seed=1).summary
    # An idle server's CPU is above 0 %, so its policy never agrees to remove the last
    # task: after the first morning (the run starts at zero) no night reaches zero.
    assert held["wake_scale_outs"] == 1 and len(held["cold_start_waits_s"]) == 1
    assert zero["wake_scale_outs"] == 2
    assert held["idle_gpu_hours"] > zero["idle_gpu_hours"] + 10


def test_a_schedule_that_wakes_before_the_day_leaves_no_wait() -> None:
    night = '\n[[scaling.schedule]]\ncron = "0 20 * * ? *"\nmin_tasks = 0\nmax_tasks = 0\n'
    early = '\n[[scaling.schedule]]\ncron = "45 7 ? * MON-FRI *"\nmin_tasks = 1\nmax_tasks = 4\n'
    p = from_spec(_spec(ZERO + night + early))
    assert p.wake is None and len(p.schedule.actions) == 2
    s = simulate(p, _night(p), step_s=STEP, seed=1).summary
    # 2024-01-01 is a Monday: both mornings wake 15 minutes before the load.
    # No request ever arrives while no task is ready (scaling out past one task is
    # target tracking's business, as without scale to zero).
    assert s["cold_start_waits_s"] == [] and s["waiting_at_end_s"] is None
    assert s["idle_gpu_hours"] > 0  # the 15 minutes before 08:00 and the instance's tail


def test_the_summary_table_shows_the_idle_cost_and_the_wait_only_for_a_zero_design() -> None:
    from ecs_gpu.sim.report import zero_lines

    zero = from_spec(_spec(ZERO + LB))
    s = simulate(zero, _night(zero), step_s=STEP, seed=1).summary
    idle, wait = zero_lines(s)
    assert idle[0] == "idle GPU-hours" and idle[1] == f"{s['idle_gpu_hours']:.2f}"
    assert wait[1] == f"{s['worst_cold_start_wait_s'] / 60:.1f} min"
    assert "longest of 2 first-request wait(s)" in wait[2]
    kept = from_spec(_spec(G5))
    assert zero_lines(simulate(kept, _night(kept), step_s=STEP, seed=1).summary) == []


# --- the sleep path ---------------------------------------------------------------------


def _tail_minutes(p: SimParams) -> list[float]:
    """Minutes from each evening's last request to the service's desired count of 0."""
    tl = simulate(p, _night(p), step_s=STEP, seed=1).timeline
    out = []
    for day in (0, 1):
        evening = (day * 24 + 20) * 3600.0
        rows = list(zip(tl["t_s"], tl["arrivals_rps"], tl["desired_tasks"], strict=True))
        last = max(t for t, a, _ in rows if a > 0 and t < evening + 3600)
        zero_at = min(t for t, _, d in rows if t > last and d == 0)
        out.append((zero_at - last) / 60)
    return out


def test_the_sleep_path_ends_the_night_sooner_than_target_tracking() -> None:
    p = from_spec(_spec(ZERO + LB))
    assert p.sleep is not None and p.sleep.minutes == sleep.quiet_minutes(_spec(ZERO + LB)) == 10
    with_sleep = _tail_minutes(p)
    without = _tail_minutes(p.with_(sleep=None))
    # N quiet minutes plus the ALB's lag and the minute's alignment; target tracking
    # waits its 15 low datapoints (and its own lag) instead.
    for m in with_sleep:
        assert 10 <= m <= 10 + 2
    assert all(w > m + 3 for w, m in zip(without, with_sleep, strict=True))
    s = simulate(p, _night(p), step_s=STEP, seed=1).summary
    ref = simulate(p.with_(sleep=None), _night(p), step_s=STEP, seed=1).summary
    assert s["sleep_scale_ins"] == 2 and ref["sleep_scale_ins"] == 0
    assert s["idle_gpu_hours"] < ref["idle_gpu_hours"]
    # Waking is untouched: the same two mornings.
    assert s["cold_start_waits_s"] == ref["cold_start_waits_s"]
