"""The issue's scaling scenarios, each run on the real engine."""

from __future__ import annotations

import math

import pytest
from simhelp import STEP, first_time, load, params

from ecs_gpu.sim.engine import simulate
from ecs_gpu.sim.params import SimParams

IDLE_S = 600.0  # an idle start, so the run begins with one task on one instance


def _field_run(p: SimParams, busy_s: float = 1800.0) -> tuple[dict[str, list[float]], float]:
    # Load = exactly one task's capacity: its GPU is 100 % busy.
    rates = load((IDLE_S, 0.0), (busy_s, p.task_capacity_rps), (3600.0, 0.0))
    res = simulate(p, rates, step_s=STEP, seed=0)
    return res.timeline, IDLE_S


@pytest.mark.parametrize(
    ("boot", "pull", "load_s"),
    [
        (150.0, 240.0, 60.0),  # the spec defaults: GPU AMI boot, 15-20 GB image
        (60.0, 30.0, 20.0),  # fast end: quick boot, small or cached image
    ],
)
def test_field_report_scale_out_then_back(boot: float, pull: float, load_s: float) -> None:
    p = params(min_instances=1, max_instances=2, max_tasks=2).with_(
        instance_boot_s=boot, image_pull_s=pull, model_load_s=load_s
    )
    tl, onset = _field_run(p)
    t = tl["t_s"]
    assert tl["desired_tasks"][round(onset / STEP) - 1] == 1
    assert tl["running_tasks"][round(onset / STEP) - 1] == 1
    assert tl["instances"][round(onset / STEP) - 1] == 1

    t_desired = first_time(t, tl["desired_tasks"], lambda v: v == 2)
    # 3 of 3 one-minute datapoints above target, each seen a flush interval late.
    assert 180.0 <= t_desired - onset <= 240.0
    t_instance = first_time(t, tl["instances"], lambda v: v == 2)
    assert t_desired < t_instance <= t_desired + 120.0
    t_running = first_time(t, tl["running_tasks"], lambda v: v == 2)
    # The field report measured 3 to 11 minutes for scale-out.
    assert 180.0 <= t_running - onset <= 660.0
    t_ready = first_time(t, tl["ready_tasks"], lambda v: v == 2)
    assert t_ready - t_running == pytest.approx(load_s, abs=STEP)
    # Serving within 11 minutes of the scale-out decision.
    assert t_ready - t_desired <= 660.0
    assert max(tl["desired_tasks"]) == 2

    # After the load stops it returns to one task and one instance.
    stop = onset + 1800.0
    t_in = first_time(t, tl["desired_tasks"], lambda v: v == 1, after=t_desired)
    # Two tasks at 50 % each already read below 0.9 x target, so AlarmLow is in
    # ALARM; only the scale-in guard (ceil(2 x 50 / 70) = 2) held the second task.
    assert stop < t_in <= stop + 120.0
    assert tl["desired_tasks"][-1] == 1
    assert tl["running_tasks"][-1] == 1
    assert tl["instances"][-1] == 1


def test_scale_out_from_zero_instances_launches_two_at_once() -> None:
    p = params(min_instances=0, max_instances=4, max_tasks=4)
    res = simulate(p, load((1800.0, 1.0)), step_s=STEP, seed=0, start="cold")
    inst = res.timeline["instances"]
    assert inst[0] == 0
    jump = next(i for i, v in enumerate(inst) if v > 0)
    # CPR = 200 from N = 0: two instances in the same step, not one then one.
    assert inst[jump] == 2
    assert inst[jump - 1] == 0
    # The one task then runs on one of them; the spare one is empty.
    assert res.timeline["running_tasks"][-1] == 1


def test_four_gpu_instance_metric_under_reports_busy_gpus() -> None:
    # One single-GPU task on a 4-GPU g5.12xlarge, its GPU ~90 % busy.
    big = params(
        instance="g5.12xlarge", min_instances=1, max_instances=2, max_tasks=8, cpu_units=4096,
        memory_mib=16384,
    )  # fmt: skip
    assert big.tasks_per_instance == 4
    rates = load((IDLE_S, 0.0), (3600.0, 0.9 * big.task_capacity_rps))
    res = simulate(big, rates, step_s=STEP, seed=0)
    s = res.summary
    busy = [v for v in res.timeline["task_gpu_util"][round(IDLE_S / STEP) :]]
    assert min(busy) == pytest.approx(90.0, abs=0.5)
    # The policy sees the average over all four GPUs: a quarter of the truth.
    late_metric = [v for v in res.timeline["gpu_metric"][-60:] if not math.isnan(v)]
    assert max(late_metric) == pytest.approx(90.0 / 4, abs=0.5)
    assert s["gpu_metric_mean_percent"] < s["task_gpu_util_mean_percent"] / 2
    # So it never scales out although the busy GPU is far above the 70 % target ...
    assert s["max_desired_tasks"] == 1
    # A metric over the task-held GPUs only (a what-if) sees the 90 % and scales.
    what_if = simulate(big.with_(gpu_metric_scope="tasks"), rates, step_s=STEP, seed=0)
    assert what_if.summary["max_desired_tasks"] == 2
    # ... and so does the same load on one-GPU instances.
    small = params(min_instances=1, max_instances=2, max_tasks=2)
    res1 = simulate(small, rates, step_s=STEP, seed=0)
    assert res1.summary["max_desired_tasks"] == 2


def test_scale_in_waits_15_low_minutes_and_keeps_busy_instances() -> None:
    p = params(min_instances=1, max_instances=6, max_tasks=6)
    high, low = 4.0 * p.task_capacity_rps * 0.7, 0.5
    rates = load((IDLE_S, high), (5400.0, high), (5400.0, low))
    res = simulate(p, rates, step_s=STEP, seed=0)
    tl = res.timeline
    t = tl["t_s"]
    drop = IDLE_S + 5400.0
    peak_desired = tl["desired_tasks"][round(drop / STEP) - 1]
    assert peak_desired >= 4
    t_in = first_time(t, tl["desired_tasks"], lambda v: v < peak_desired, after=drop)
    # 15 of 15 one-minute datapoints below 0.9 x target before the first scale-in.
    assert 15 * 60 <= t_in - drop <= 18 * 60
    t_inst = first_time(t, tl["instances"], lambda v: v < peak_desired, after=drop)
    assert t_inst >= t_in
    assert tl["instances"][-1] == 1
    # Managed termination protection: an instance is removed only when empty, so
    # the running count never falls unless the service lowered desired first.
    for i in range(1, len(t)):
        if tl["running_tasks"][i] < tl["running_tasks"][i - 1]:
            assert tl["desired_tasks"][i] < tl["desired_tasks"][i - 1] or (
                tl["desired_tasks"][i] <= tl["running_tasks"][i]
            )
        assert tl["instances"][i] >= math.ceil(tl["running_tasks"][i] / p.tasks_per_instance)


def test_odcr_floor_holds_instances_when_idle() -> None:
    spec_kw = {
        "min_instances": 2,
        "max_instances": 4,
        "max_tasks": 4,
    }
    p = params(**spec_kw).with_(reserved_instances=2)
    res = simulate(p, load((3 * 3600.0, 0.2)), step_s=STEP, seed=0)
    assert min(res.timeline["instances"]) == 2
    assert res.summary["gpu_hours"] == pytest.approx(2 * 3.0, rel=1e-6)


def test_host_cpu_asg_policy_raises_instance_hours() -> None:
    # A CPU-heavy workload (tokenization): tasks near full CPU when busy.
    sim = "cpu_percent_at_full_load = 95.0"
    base = params(min_instances=1, max_instances=8, max_tasks=8, simulation=sim)
    rates = load((3600.0, 3 * base.task_capacity_rps * 0.7), (3 * 3600.0, 2.5), (3600.0, 0.5))
    without = simulate(base, rates, step_s=STEP, seed=0).summary
    fought = simulate(
        base.with_(host_cpu_policy_target_percent=50.0), rates, step_s=STEP, seed=0
    ).summary
    assert fought["instance_hours"] > without["instance_hours"] * 1.2
    assert fought["max_instances"] > without["max_instances"]
    # The extra instances serve nothing: the task count does not change.
    assert fought["max_tasks"] == without["max_tasks"]


def test_latency_and_overload_are_measured_from_onset() -> None:
    p = params(min_instances=1, max_instances=4, max_tasks=4)
    # Load that needs 3 tasks arrives in one step on a one-task fleet.
    rates = load((IDLE_S, 0.0), (3600.0, 2.5 * p.task_capacity_rps))
    s = simulate(p, rates, step_s=STEP, seed=0).summary
    assert len(s["scale_out_latency_s"]) >= 1
    first = s["scale_out_latency_s"][0]
    # Not before the new tasks could possibly be ready.
    assert first >= 180 + p.instance_boot_s + p.image_pull_s + p.model_load_s
    assert s["overload_seconds"] >= first
    assert s["unserved_requests"] > 0
    assert s["gpu_hours"] > 0 and s["oracle_gpu_hours"] > 0
