"""Scale to zero in the simulator: the wake path, the schedule, and what the first request waits."""

from __future__ import annotations

import numpy as np
import pytest
from research.stress import shape_rates

from ecs_gpu.design.paths import sleep, wake
from ecs_gpu.sim import params as P
from ecs_gpu.sim.controllers import ScheduleLayer, ServiceLayer, SleepLayer, WakeLayer
from ecs_gpu.sim.engine import simulate
from ecs_gpu.sim.fleet import Fleet
from ecs_gpu.sim.metrics import MetricSeries
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
    assert p.wake is not None and not p.cpu_scale_in
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


def test_without_requests_a_fleet_at_zero_pays_nothing() -> None:
    p = from_spec(_spec(ZERO + LB))
    s = simulate(p, np.zeros(360), step_s=STEP, seed=0).summary
    assert s["gpu_hours"] == 0 and s["max_instances"] == 0 and s["wake_scale_outs"] == 0
    assert s["cold_start_waits_s"] == [] and s["idle_gpu_hours"] == 0


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
    held = simulate(p.with_(cpu_scale_in=True), _night(p), step_s=STEP, seed=1).summary
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
    assert p.wake is None and len(p.schedule) == 2
    s = simulate(p, _night(p), step_s=STEP, seed=1).summary
    # 2024-01-01 is a Monday: both mornings wake 15 minutes before the load.
    # No request ever arrives while no task is ready (scaling out past one task is
    # target tracking's business, as without scale to zero).
    assert s["cold_start_waits_s"] == [] and s["waiting_at_end_s"] is None
    assert s["idle_gpu_hours"] > 0  # the 15 minutes before 08:00 and the instance's tail


def test_the_schedule_in_force_at_the_start_is_the_latest_before_it() -> None:
    night = '\n[[scaling.schedule]]\ncron = "0 20 * * ? *"\nmin_tasks = 0\nmax_tasks = 0\n'
    day = '\n[[scaling.schedule]]\ncron = "0 8 ? * MON-FRI *"\nmin_tasks = 1\nmax_tasks = 4\n'
    p = from_spec(_spec(ZERO + night + day))
    layer = ScheduleLayer(p.schedule, P.DEFAULT_START_UTC)
    assert layer.initial() == (0, 0)  # Sunday 20:00 was the last
    assert layer.due(8 * 3600.0) == (1, 4) and layer.due(8 * 3600.0 + 60) is None
    # Saturday 08:00 (day 5) runs nothing: MON-FRI.
    assert layer.due(5 * 86400.0 + 8 * 3600.0) is None
    # At the start (t = 0, Monday 00:00) the night's (0, 0) holds the service at zero.
    s = simulate(p, np.full(60, 5.0), step_s=STEP, seed=0).summary
    assert s["max_tasks"] == 0 and s["unserved_requests"] > 0


def test_an_action_due_at_the_start_itself_is_in_force() -> None:
    # t = 0 is Monday 00:00 UTC: a midnight wake must not leave the evening's zero on.
    night = '\n[[scaling.schedule]]\ncron = "0 20 * * ? *"\nmin_tasks = 0\nmax_tasks = 0\n'
    midnight = '\n[[scaling.schedule]]\ncron = "0 0 * * ? *"\nmin_tasks = 1\nmax_tasks = 4\n'
    p = from_spec(_spec(ZERO + night + midnight))
    assert ScheduleLayer(p.schedule, P.DEFAULT_START_UTC).initial() == (1, 4)
    s = simulate(p, np.full(60, 1.0), step_s=STEP, seed=0).summary
    assert s["max_tasks"] >= 1 and s["unserved_requests"] == 0


def test_the_wake_alarm_reads_requests_only_while_no_task_runs() -> None:
    wp = wake.WakePath(cooldown_s=300)
    layer = WakeLayer(wp, delay_s=60.0)
    layer.sample(3.0, 0)
    layer.close_minute(60.0)
    assert layer.decide(60.0, 0, 0, 4) == 0  # not visible yet: the ALB's lag
    assert layer.decide(120.0, 0, 0, 4) == 1 and layer.actions == 1
    # Within the cooldown nothing more, whatever the alarm reads.
    layer.sample(3.0, 0)
    layer.close_minute(120.0)
    assert layer.decide(180.0, 0, 1, 4) == 1 and layer.actions == 1
    # A minute with a RUNNING task reads 0; one without requests publishes nothing.
    layer.sample(9.0, 1)
    layer.close_minute(180.0)
    layer.series.visible(240.0)
    assert layer.series.latest == 0.0
    layer.close_minute(240.0)
    layer.series.visible(300.0)
    assert layer.series.latest is None
    assert layer.decide(900.0, 1, 1, 4) == 1 and layer.actions == 1


def test_at_max_tasks_zero_the_wake_adds_nothing() -> None:
    layer = WakeLayer(wake.WakePath(cooldown_s=0), delay_s=0.0)
    layer.sample(5.0, 0)
    layer.close_minute(60.0)
    assert layer.decide(60.0, 0, 0, 0) == 0 and layer.actions == 0


def test_the_cpu_vote_leaves_the_scale_in_only_when_told() -> None:
    p = from_spec(_spec(ZERO + LB))
    cpu = MetricSeries()
    gpu = MetricSeries()
    for _ in range(P.TT_LOW_DATAPOINTS):
        cpu.history.append(p.cpu_idle_percent)
        gpu.history.append(0.0)
    fleet = Fleet(p.tasks_per_instance, p.image_pull_s, p.model_load_s)
    fleet.launch(-600.0, 0.0, 0.0)
    fleet.add_ready_task(fleet.registered[0], 0.0)
    for scale_in, want in ((True, 1), (False, 0)):
        layer = ServiceLayer(p.with_(cpu_scale_in=scale_in), 1, [(gpu, 70.0)], cpu)
        layer.decide(600.0, fleet, False)
        assert layer.desired == want


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


def _idle_minute(layer: SleepLayer, minute: int, running: int = 1) -> None:
    """A minute with no request and nothing in flight, a task RUNNING or not."""
    layer.sample(0.0, 0.0, running)
    layer.close_minute(minute * 60.0)


def test_the_sleep_alarm_needs_every_minute_quiet_and_keeps_the_minimum() -> None:
    layer = SleepLayer(sleep.SleepPath(minutes=3, in_flight=False), delay_s=60.0)
    for minute in (1, 2, 3):
        _idle_minute(layer, minute)  # a task runs, nothing arrives
    # Three quiet minutes, but the third is not visible until its lag has passed.
    assert layer.decide(180.0, 2, 0) == 2
    assert layer.decide(240.0, 2, 0) == 0 and layer.actions == 1
    # A request in the window holds it; a scheduled minimum is never crossed.
    layer.sample(1.0, 0.0, 1)
    layer.close_minute(240.0)
    assert layer.decide(300.0, 1, 0) == 1
    for minute in (5, 6, 7):
        _idle_minute(layer, minute)
    assert layer.decide(480.0, 1, 1) == 1 and layer.actions == 1
    assert layer.decide(540.0, 2, 1) == 1 and layer.actions == 2


@pytest.mark.parametrize("in_flight", [False, True])
def test_a_request_still_streaming_is_never_cut(in_flight: bool) -> None:
    # No new request for minutes, but one still in flight holds its connection to
    # the load balancer (ActiveConnectionCount): never quiet, with or without the
    # sidecars' in-flight series.
    layer = SleepLayer(sleep.SleepPath(minutes=2, in_flight=in_flight), delay_s=0.0)
    for minute in range(1, 6):
        layer.sample(0.0, 1.0, 1)
        layer.close_minute(minute * 60.0)
        assert layer.decide(minute * 60.0, 1, 0) == 1
    # Once it has finished, two quiet minutes put the service to sleep.
    for minute in (6, 7):
        _idle_minute(layer, minute)
    assert layer.decide(420.0, 1, 0) == 0


def test_a_task_the_wake_started_is_not_put_back_to_sleep_while_it_starts() -> None:
    # One request at zero got its 503 and holds no connection; the task the wake
    # asked for has no CPU datapoint until RUNNING (a cold start outlasts the
    # quiet minutes). Ungated, those minutes would read quiet and stop it.
    layer = SleepLayer(sleep.SleepPath(minutes=2, in_flight=False), delay_s=0.0)
    layer.sample(1.0, 0.0, 0)
    layer.close_minute(60.0)
    for minute in range(2, 14):
        _idle_minute(layer, minute, running=0)
        assert layer.decide(minute * 60.0, 1, 0) == 1
    assert layer.actions == 0
    # Once it runs and stays idle, the quiet minutes count.
    for minute in (14, 15):
        _idle_minute(layer, minute)
    assert layer.decide(900.0, 1, 0) == 0 and layer.actions == 1
