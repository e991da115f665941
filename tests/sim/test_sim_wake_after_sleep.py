"""A request soon after the sleep path set 0, while the wake policy's own cooldown may run.

The wake (one task, ChangeInCapacity +1) starts a cooldown; the sleep (ExactCapacity 0)
could stop that task before a long cooldown ends. During a scale-out cooldown the policy
"won't increase the desired capacity again unless either a larger scale out is
triggered or the cooldown period ends", and the wake's one step is never larger
(aws-semantics §10 "The wake's cooldown after a sleep"); AWS documents no way a
scale-in ends a scale-out cooldown, so the model keeps it (a [gap] there). The
library's cooldown (wake.cooldown_s) ends within the sleep's quiet window, so it never
holds a wake after a sleep.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
import pytest

from ecs_gpu.design.paths import sleep, wake
from ecs_gpu.design.paths.sleep import SleepPath
from ecs_gpu.sim.controllers.sleep import SleepLayer
from ecs_gpu.sim.engine import SimResult, simulate
from ecs_gpu.sim.params import SimParams, from_spec
from ecs_gpu.spec import parse_spec
from example_specs import G5, P5, scaled_to_zero

STEP = 10.0
LB = '\n[load_balancer]\nscheme = "internal"\n'
POOL = "\n[capacity.warm_pool]\nmin_size = 1\n"
ZERO = G5.replace("min_tasks = 1", "min_tasks = 0").replace(
    "min_instances = 1", "min_instances = 0"
)
KEPT = G5.replace("min_tasks = 1", "min_tasks = 0")
# The first request, in the trace's seventh step (t = 60 s).
FIRST_S = 60.0
# A request after the sleep: its ALB minute closes, its datapoint's lag, the alarm's
# minute (wake.detection_s), and the step it lands in.
DETECTION_S = wake.detection_s(wake.WakePath(cooldown_s=0)) + STEP


def _params(text: str, model_load_s: float = 60.0, image_pull_s: float = 240.0) -> SimParams:
    extra = f"model_load_s = {model_load_s:g}\nimage_pull_s = {image_pull_s:g}\n"
    text = text.replace("mean_request_s = 8.0\n", "mean_request_s = 8.0\n" + extra)
    spec = parse_spec(text, "w.toml")
    return from_spec(spec).with_(poisson_arrivals=False, boot_jitter_fraction=0.0)


def _trace(*requests_at_s: float, minutes: int = 90) -> npt.NDArray[np.float64]:
    """One request (0.1 rps for one 10-s step) at each time, none otherwise."""
    r = np.zeros(round(minutes * 60 / STEP))
    for at in requests_at_s:
        r[round(at / STEP)] = 1 / STEP
    return r


def _changes(res: SimResult) -> tuple[list[float], list[float]]:
    """(times the desired count rose, times it fell)."""
    t, d = res.timeline["t_s"], res.timeline["desired_tasks"]
    up = [t[i] for i in range(1, len(d)) if d[i] > d[i - 1]]
    down = [t[i] for i in range(1, len(d)) if d[i] < d[i - 1]]
    return up, down


def _wake_and_sleep(p: SimParams) -> tuple[float, float]:
    """The first wake's rise and the sleep's fall after one request at zero."""
    up, down = _changes(simulate(p, _trace(FIRST_S), step_s=STEP, seed=0))
    assert len(up) == 1 and len(down) == 1
    return up[0], down[0]


def test_the_issue_scenario_a_twenty_minute_cooldown_outlives_the_sleep() -> None:
    # A cold start of 7.5 min (boot 150 + pull 240 + model 60), served, then 10 quiet
    # minutes: the sleep sets 0 at t0 + 18 min, inside a 1,200-s wake cooldown.
    p = _params(ZERO + LB).with_(wake=wake.WakePath(cooldown_s=1200))
    t0, slept = _wake_and_sleep(p)
    assert slept - t0 == 18 * 60 and slept < t0 + 1200
    # A request at t0 + 19 min: detected after the cooldown's end (t0 + 20 min),
    # so it rises at its detection, the cooldown's remainder hidden in it.
    up, _ = _changes(simulate(p, _trace(FIRST_S, t0 + 19 * 60), step_s=STEP, seed=0))
    assert up == [t0, t0 + 21 * 60]


def test_a_cooldown_past_the_detection_holds_the_wake_and_drops_a_lone_request() -> None:
    p = _params(ZERO + LB).with_(wake=wake.WakePath(cooldown_s=1500))
    t0, slept = _wake_and_sleep(p)
    request = slept + STEP
    assert request + DETECTION_S < t0 + 1500
    # A lone request: its minute is the alarm's one ALARM minute, held by the
    # cooldown; the next minute has no datapoint and the alarm is OK again. No wake.
    up, _ = _changes(simulate(p, _trace(FIRST_S, request), step_s=STEP, seed=0))
    assert up == [t0]
    # A client retrying every minute keeps the alarm in ALARM: it rises when the
    # cooldown ends, not at its detection.
    retries = [request + 60 * k for k in range(8)]
    up, _ = _changes(simulate(p, _trace(FIRST_S, *retries), step_s=STEP, seed=0))
    assert up == [t0, t0 + 1500]


@pytest.mark.parametrize("model_load_s", [60.0, 600.0])
@pytest.mark.parametrize(
    "text", [ZERO + LB, ZERO + LB + POOL, KEPT + LB], ids=["cold", "pool", "kept"]
)
def test_the_library_cooldown_ends_before_the_sleep_so_the_next_request_wakes(
    text: str, model_load_s: float
) -> None:
    p = _params(text, model_load_s)
    assert p.wake is not None and p.sleep is not None
    t0, slept = _wake_and_sleep(p)
    assert t0 + p.wake.cooldown_s <= slept
    request = slept + STEP
    up, _ = _changes(simulate(p, _trace(FIRST_S, request), step_s=STEP, seed=0))
    assert len(up) == 2 and up[0] == t0
    assert request < up[1] <= request + DETECTION_S


@pytest.mark.parametrize(
    "text", [ZERO + LB, ZERO + LB + POOL, KEPT + LB], ids=["cold", "pool", "kept"]
)
def test_the_shorter_cooldown_still_starts_one_task_for_a_retrying_client(text: str) -> None:
    # Requests every 20 s from zero: the alarm is in ALARM each minute until it sees
    # the task's CPU datapoint; the cooldown outlasts that, so one task, one wake.
    p = _params(text, 600.0)
    r = np.zeros(round(40 * 60 / STEP))
    r[6::2] = 1 / STEP
    res = simulate(p, r, step_s=STEP, seed=0)
    assert res.summary["wake_scale_outs"] == 1 and max(res.timeline["desired_tasks"]) == 1


def test_each_request_after_a_sleep_wakes_even_on_the_instance_still_there() -> None:
    # After the first sleep the instance stays (managed scaling's 15 minutes), so the
    # next wake's task is RUNNING at once and the sleep may come a quiet window after
    # it: a cooldown longer than that window (the cold warm-up + 300 s) would hold the
    # third request's wake.
    p = _params(ZERO + LB, 600.0)
    assert p.sleep is not None and p.wake is not None
    assert p.wake.cooldown_s == p.sleep.minutes * sleep.PERIOD_S
    requests = [FIRST_S]
    for _ in range(3):
        _, down = _changes(simulate(p, _trace(*requests), step_s=STEP, seed=0))
        requests.append(down[len(requests) - 1] + STEP)
    up, down = _changes(simulate(p, _trace(*requests), step_s=STEP, seed=0))
    assert len(up) == len(requests) == 4
    assert all(r < u <= r + DETECTION_S for r, u in zip(requests, up, strict=True))
    # The warm-up + 300 s (1,320 s here) outlives each later sleep.
    assert all(d - u < 1320 for u, d in zip(up[1:], down[1:], strict=True))


def test_a_cold_start_past_the_window_may_add_a_second_task_on_the_second_instance() -> None:
    # The trade-off the bound makes (wake.cooldown_s): a 7-minute pull puts the cold
    # task's RUNNING past the cooldown minus the CPU datapoint's lag, so a client
    # retrying every 20 s adds a second task; managed scaling's first launch from
    # none brings two instances (CPR 200), and the second takes it.
    p = _params(ZERO + LB, 60.0, image_pull_s=420.0)
    r = np.zeros(round(40 * 60 / STEP))
    r[6::2] = 1 / STEP
    res = simulate(p, r, step_s=STEP, seed=0)
    assert res.summary["wake_scale_outs"] == 2 and max(res.timeline["desired_tasks"]) == 2
    assert max(res.timeline["instances"]) == 2
    longer = simulate(p.with_(wake=wake.WakePath(cooldown_s=1200)), r, step_s=STEP, seed=0)
    assert longer.summary["wake_scale_outs"] == 1 and max(longer.timeline["instances"]) == 2


def _first_running_and_sleep(p: SimParams, minutes: int) -> tuple[float, float | None, int]:
    """After one request at zero: when the woken task is first RUNNING, when the desired
    count falls (None: never) and how often the sleep path set it."""
    res = simulate(p, _trace(FIRST_S, minutes=minutes), step_s=STEP, seed=0)
    tl = res.timeline
    running = next(t for t, n in zip(tl["t_s"], tl["running_tasks"], strict=True) if n > 0)
    _, down = _changes(res)
    return running, (down[0] if down else None), res.summary["sleep_scale_ins"]


def test_a_big_model_woken_by_one_request_is_not_put_to_sleep_before_it_serves() -> None:
    # p5-8gpu at zero: a 40-minute model load after its boot and pull. The woken task
    # is RUNNING (the CPU gate reads "a task runs") all through that load, and the lone
    # request got its 503: every minute from then on is quiet.
    spec = parse_spec(scaled_to_zero(P5), "p5.toml")
    p = from_spec(spec).with_(poisson_arrivals=False, boot_jitter_fraction=0.0)
    assert p.model_load_s > 39 * 60 and p.sleep is not None
    assert p.sleep.minutes == sleep.quiet_minutes(spec) == 62
    # The sleep alarm, minute by minute, as the engine feeds it: RUNNING from the
    # engine's own start, quiet after; it does not set 0 before the model is up and its
    # target has passed the ALB's two 30-s checks.
    running, _, _ = _first_running_and_sleep(p, 30)
    healthy = running + p.model_load_s + 60
    for sp, stops_it in ((p.sleep, False), (SleepPath(minutes=10, in_flight=False), True)):
        layer = SleepLayer(sp, p.metrics.alb_metric_delay_s)
        slept = []
        for minute in range(1, round(healthy / 60) + 1):
            t = minute * 60.0
            layer.sample(1.0 if minute == 1 else 0.0, 0.0, int(t > running))
            layer.close_minute(t)
            if layer.decide(t, 1, 0) == 0:
                slept.append(t)
        # The ten minutes of before stopped it a quarter of the way into its load.
        assert bool(slept) is stops_it and (not slept or slept[0] <= running + 12 * 60)
    # In the engine: the spec's window never sets 0 during the load; ten minutes did.
    _, _, sleeps = _first_running_and_sleep(p, 60)
    assert sleeps == 0
    _, fell, sleeps = _first_running_and_sleep(p.with_(sleep=SleepPath(10, False)), 60)
    assert sleeps == 1 and fell is not None and fell < running + p.model_load_s


def test_a_small_model_keeps_the_ten_minutes() -> None:
    # g5's 60-s model loads well within the longest request's ten minutes: the sleep
    # sets 0 ten quiet minutes (plus the ALB's lag and the minute's alignment) after the
    # woken task's first RUNNING minute, as before.
    p = _params(ZERO + LB)
    assert p.sleep is not None and p.sleep.minutes == 10
    running, fell, sleeps = _first_running_and_sleep(p, 60)
    assert sleeps == 1 and fell is not None and 10 * 60 <= fell - running <= 12 * 60
