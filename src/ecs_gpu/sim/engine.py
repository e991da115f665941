"""The discrete-time loop: load, metrics, controllers, fleet; no I/O.

Same parameters, load and seed give the same result: the only randomness
(Poisson arrivals inside a step, instance boot jitter) comes from one
``numpy.random.Generator`` seeded by the caller.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from ecs_gpu.errors import BadInputError
from ecs_gpu.sim import params as P
from ecs_gpu.sim.controllers import (
    AsgScaler,
    MetricSeries,
    ServiceScaler,
    Vote,
    capacity_provider_reservation,
    target_tracking_vote,
)
from ecs_gpu.sim.fleet import Fleet
from ecs_gpu.sim.params import SimParams

# Columns of the timeline, in CSV order (docs/simulator.md "Outputs").
TIMELINE_COLUMNS = (
    "t_s",
    "offered_rps",
    "arrivals_rps",
    "ready_capacity_rps",
    "served_rps",
    "queued_requests",
    "unserved_requests",
    "desired_tasks",
    "running_tasks",
    "ready_tasks",
    "instances",
    "registered_instances",
    "gpu_metric",
    "task_gpu_util",
    "service_cpu",
    "host_cpu",
    "cpr",
)

ProgressFn = Callable[[int, int], None]
Start = Literal["warm", "cold"]


@dataclass(frozen=True)
class SimResult:
    params: SimParams
    step_s: float
    seed: int
    timeline: dict[str, list[float]]
    summary: dict[str, Any]


# Steps shorter than a second resolve nothing more (every delay and interval
# the model has is whole seconds) and only multiply the run's length.
MIN_STEP_S = 1.0
# numpy's Poisson sampler refuses means near 2**63; no fleet this models serves
# a billion requests a second, so a larger load is a mis-set --rate-scale.
MAX_OFFERED_RPS = 1e9


def check_step(step_s: float) -> None:
    """Refuse a step that does not divide the one-minute alarm period evenly."""
    ok = math.isfinite(step_s) and step_s >= MIN_STEP_S
    per_min = P.ALARM_PERIOD_S / step_s if ok else 0.0
    if not ok or abs(per_min - round(per_min)) > 1e-9:
        raise BadInputError(
            f"--step = {step_s!r} s: must be at least {MIN_STEP_S:g} s and divide the "
            f"{P.ALARM_PERIOD_S:g}-second alarm period. Fix: use 1, 2, 5, 10, 15, 20, 30 or 60."
        )


def oracle_gpu_hours(p: SimParams, offered_rps: list[float], step_s: float) -> float:
    """GPU-hours of a fleet with perfect foresight and no start-up delay.

    Each step it runs exactly the tasks that keep the GPUs at the target and
    the fewest instances that hold them (never below the floor).
    """
    inst_s = 0.0
    cache: dict[int, int] = {}
    for rate in offered_rps:
        k = p.tasks_for_rate(rate)
        n = cache.get(k)
        if n is None:
            n = cache[k] = p.instances_for_tasks(k)
        inst_s += n
    return inst_s * step_s * p.gpus_per_instance / 3600.0


def simulate(
    p: SimParams,
    offered_rps: npt.NDArray[np.float64],
    *,
    step_s: float = 10.0,
    seed: int = 0,
    start: Start = "warm",
    progress: ProgressFn | None = None,
    noisy_arrivals: bool = True,
) -> SimResult:
    """Run the fleet against ``offered_rps`` (mean requests/s per step).

    ``offered_rps`` is the trace's load; it defines overload and the oracle.
    With ``noisy_arrivals`` (and ``p.poisson_arrivals``) the requests that
    actually arrive in a step are Poisson around it: pass False for a trace of
    real arrivals, which carries its own burstiness.
    """
    check_step(step_s)
    if p.tasks_per_instance < 1:
        raise BadInputError(
            f"{p.instance_type}: one task does not fit the instance (tasks_per_instance = "
            f"{p.tasks_per_instance}). Fix: lower the task's GPUs, CPU units or memory."
        )
    rng = np.random.default_rng(seed)
    lam = np.clip(np.asarray(offered_rps, dtype=np.float64), 0.0, None) * step_s
    noisy = p.poisson_arrivals and noisy_arrivals
    counts: list[float] = (rng.poisson(lam) if noisy else lam).astype(float).tolist()
    offered: list[float] = (lam / step_s).tolist()
    nsteps = len(offered)
    steps_per_min = round(P.ALARM_PERIOD_S / step_s)
    steps_per_sample = max(1, round(p.collection_interval_s / step_s))

    fleet = Fleet(p.tasks_per_instance, p.image_pull_s, p.model_load_s, p.placement)
    jitter = p.boot_jitter_fraction

    def boot_time() -> float:
        return p.instance_boot_s * (1.0 + jitter * (2.0 * float(rng.random()) - 1.0))

    if start == "warm":
        # The steady state for the first step's load: tasks at the target.
        desired = p.tasks_for_rate(float(offered_rps[0]) if nsteps else 0.0)
        for _ in range(p.instances_for_tasks(desired)):
            fleet.launch(-p.instance_warmup_s, 0.0, 0.0)
        for j in range(desired):
            inst = fleet.registered[j % len(fleet.registered)]
            if p.placement == "binpack":
                inst = fleet.registered[j // p.tasks_per_instance]
            fleet.add_ready_task(inst, 0.0)
    else:
        desired = p.min_tasks
        for _ in range(p.floor_instances):
            fleet.launch(0.0, boot_time(), p.instance_warmup_s)
        fleet.provisioning = desired

    service = ServiceScaler(p.min_tasks, p.max_tasks, p.scale_in_cooldown_s)
    asg = AsgScaler(
        p.target_capacity_percent,
        p.floor_instances,
        p.max_instances,
        p.min_scaling_step,
        p.max_scaling_step,
        p.host_cpu_policy_target_percent,
    )
    gpu_s, cpu_s, host_s, cpr_s = MetricSeries(), MetricSeries(), MetricSeries(), MetricSeries()
    gpu_sum = gpu_n = res_sum = cpu_sum = cpu_n = host_sum = host_n = 0.0
    gpu_last_t = 0.0

    cols: dict[str, list[float]] = {c: [] for c in TIMELINE_COLUMNS}
    c_t, c_off, c_arr, c_cap, c_srv = (
        cols["t_s"],
        cols["offered_rps"],
        cols["arrivals_rps"],
        cols["ready_capacity_rps"],
        cols["served_rps"],
    )
    c_q, c_un, c_des, c_run = (
        cols["queued_requests"],
        cols["unserved_requests"],
        cols["desired_tasks"],
        cols["running_tasks"],
    )
    c_rdy, c_inst, c_reg, c_gpu = (
        cols["ready_tasks"],
        cols["instances"],
        cols["registered_instances"],
        cols["gpu_metric"],
    )
    c_tgu, c_cpu, c_host, c_cpr = (
        cols["task_gpu_util"],
        cols["service_cpu"],
        cols["host_cpu"],
        cols["cpr"],
    )

    cap_rps = p.task_capacity_rps
    gpt = p.gpus_per_task
    gpi = p.gpus_per_instance
    asg_scope = p.gpu_metric_scope == "asg"
    count_pending = p.reservation_includes_pending
    idle = p.cpu_idle_percent
    span = p.cpu_percent_at_full_load - p.cpu_idle_percent
    task_cpu_share = p.task_cpu_units / p.instance_cpu_units
    nan = math.nan
    queue = 0.0
    unserved = served_total = offered_total = 0.0
    instance_s = 0.0
    overload_s = 0.0
    busy_gpu_s = held_gpu_s = 0.0
    latencies: list[float] = []
    overload_since: float | None = None
    last_cpr = nan
    progress_every = max(1, nsteps // 200)

    for i in range(nsteps):
        t = i * step_s
        fleet.advance(t)
        if fleet.provisioning:
            fleet.place(t)
        if i and i % steps_per_min == 0:
            # Close the minute that just ended and let the alarms look.
            gpu_at = gpu_last_t + p.agent_flush_delay_s
            gpu_v = gpu_sum / gpu_n if gpu_n else None
            if not asg_scope:
                # The metric math needs both series' datapoints for the minute;
                # ECS publishes GPUReservation with the CPU metric's lag.
                gpu_at = max(gpu_at, t + p.ecs_metric_delay_s)
                if gpu_v is not None and res_sum > 0:
                    # gpu_metric.TASK_GPU_EXPRESSION: util x 100 / reserved,
                    # or the raw average while nothing is reserved.
                    gpu_v = gpu_v * 100.0 / (res_sum / gpu_n)
            gpu_s.publish(gpu_at, gpu_v)
            cpu_s.publish(t + p.ecs_metric_delay_s, cpu_sum / cpu_n if cpu_n else None)
            host_s.publish(t + p.ecs_metric_delay_s, host_sum / host_n if host_n else None)
            gpu_sum = gpu_n = res_sum = cpu_sum = cpu_n = host_sum = host_n = 0.0
            gpu_s.visible(t)
            cpu_s.visible(t)
            host_s.visible(t)
            base = fleet.running
            votes: list[Vote] = [
                target_tracking_vote(
                    gpu_s.history, p.gpu_target_percent, base, scale_in_basis=p.scale_in_basis
                ),
                target_tracking_vote(
                    cpu_s.history, p.cpu_target_percent, base, scale_in_basis=p.scale_in_basis
                ),
            ]
            desired = service.decide(t, votes, desired)
            total = fleet.desired_total
            if desired > total:
                fleet.provisioning += desired - total
                fleet.place(t)
            elif desired < total:
                fleet.stop(total - desired)
            last_cpr = capacity_provider_reservation(
                len(fleet.instances),
                fleet.provisioning,
                fleet.empty_registered(),
                p.tasks_per_instance,
            )
            cpr_s.publish(t + p.cpr_delay_s, last_cpr)
            cpr_s.visible(t)
            delta = asg.decide(
                len(fleet.instances),
                fleet.all_warm(t),
                cpr_s,
                host_s if p.host_cpu_policy_target_percent is not None else None,
            )
            if delta > 0:
                for _ in range(delta):
                    fleet.launch(t, boot_time(), p.instance_warmup_s)
            elif delta < 0:
                fleet.terminate_empty(-delta)
            while len(fleet.instances) < p.floor_instances:
                fleet.launch(t, boot_time(), p.instance_warmup_s)

        # Serve this step's load from ready tasks; the rest queues, up to a bound.
        ready = fleet.ready
        cap = ready * cap_rps
        arrivals = counts[i]
        offered_total += arrivals
        can = cap * step_s
        work = queue + arrivals
        served = work if work < can else can
        left = work - served
        bound = cap * p.max_queue_s
        drop = left - bound if left > bound else 0.0
        queue = left - drop
        unserved += drop
        served_total += served
        u = served / can if can > 0 else 0.0

        rate = offered[i]
        if rate > cap + 1e-9:
            overload_s += step_s
            if overload_since is None:
                overload_since = t
        elif overload_since is not None:
            latencies.append(t - overload_since)
            overload_since = None

        nreg = len(fleet.registered)
        running = fleet.running
        if i % steps_per_sample == 0 and nreg:
            # The agent's ASG-wide average over every GPU of every registered
            # instance: GPUs no ready task works on (free, or held by a task
            # still pulling or loading) report 0 %.
            gpu_sum += 100.0 * ready * gpt * u / (nreg * gpi)
            gpu_n += 1
            gpu_last_t = t
            if not asg_scope:
                # AWS/ECS GPUReservation: GPUs reserved by tasks over all GPUs
                # of the registered (ACTIVE) instances, busy or not (§3).
                held = fleet.placed if count_pending else running
                res_sum += 100.0 * held * gpt / (nreg * gpi)
        task_cpu = host = nan
        if running:
            task_cpu = (ready * (idle + span * u) + (running - ready) * idle) / running
            cpu_sum += task_cpu
            cpu_n += 1
        if nreg:
            host = (
                p.host_cpu_baseline_percent
                + (ready * (idle + span * u) + (running - ready) * idle) * task_cpu_share / nreg
            )
            host_sum += host
            host_n += 1
        if ready:
            busy_gpu_s += u * step_s
            held_gpu_s += step_s
        ninst = len(fleet.instances)
        instance_s += ninst * step_s

        c_t.append(t)
        c_off.append(rate)
        c_arr.append(arrivals / step_s)
        c_cap.append(cap)
        c_srv.append(served / step_s)
        c_q.append(queue)
        c_un.append(unserved)
        c_des.append(desired)
        c_run.append(running)
        c_rdy.append(ready)
        c_inst.append(ninst)
        c_reg.append(nreg)
        latest = gpu_s.latest
        c_gpu.append(nan if latest is None else latest)
        c_tgu.append(100.0 * u if ready else nan)
        c_cpu.append(task_cpu)
        c_host.append(host)
        c_cpr.append(last_cpr)
        if progress is not None and i % progress_every == 0:
            progress(i, nsteps)
    if progress is not None:
        progress(nsteps, nsteps)

    duration = nsteps * step_s
    gpu_hours = instance_s * gpi / 3600.0
    oracle = oracle_gpu_hours(p, offered, step_s)
    gm = [v for v in c_gpu if not math.isnan(v)]
    summary: dict[str, Any] = {
        "duration_s": duration,
        "step_s": step_s,
        "seed": seed,
        "start": start,
        "instance_type": p.instance_type,
        "gpu_target_percent": p.gpu_target_percent,
        "gpu_metric": P.GPU_METRIC_NAME[p.gpu_metric_scope],
        "gpu_hours": round(gpu_hours, 4),
        "oracle_gpu_hours": round(oracle, 4),
        "gpu_hours_ratio_to_oracle": round(gpu_hours / oracle, 4) if oracle else None,
        "instance_hours": round(instance_s / 3600.0, 4),
        "cost_usd": round(instance_s / 3600.0 * p.price_usd_per_hour, 2),
        "overload_seconds": overload_s,
        "offered_requests": round(offered_total, 1),
        "served_requests": round(served_total, 1),
        "unserved_requests": round(unserved, 1),
        "scale_out_latency_s": latencies,
        "worst_scale_out_latency_s": max(latencies) if latencies else None,
        "overloaded_at_end_s": None if overload_since is None else duration - overload_since,
        "max_tasks": int(max(c_run)) if c_run else 0,
        "max_desired_tasks": int(max(c_des)) if c_des else 0,
        "max_instances": int(max(c_inst)) if c_inst else 0,
        # The metric the GPU policy sees against the utilization of the GPUs
        # that ready tasks hold: with "asg-average" the gap is idle GPUs
        # diluting the average; with "task-gpus", reserved GPUs not serving yet.
        "gpu_metric_mean_percent": round(sum(gm) / len(gm), 2) if gm else None,
        "task_gpu_util_mean_percent": (
            round(100.0 * busy_gpu_s / held_gpu_s, 2) if held_gpu_s else None
        ),
    }
    return SimResult(p, step_s, seed, cols, summary)
