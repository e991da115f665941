"""The discrete-time loop over the simulator's units; no I/O.

Units, each with its own state: the fleet (fleet.py: boot, placement, pull,
load), the request queue (serving.py), the metric pipeline (metrics.py), the
controllers a design has (controllers/: the service and instance layers, the
step paths, the series they read, what the run bills) and the recorder (here).

Same parameters, load and seed give the same result: the only randomness
(Poisson arrivals inside a step, instance boot jitter) comes from one
``numpy.random.Generator`` seeded by the caller.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from operator import itemgetter
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from ecs_gpu.errors import BadInputError
from ecs_gpu.sim import params as P
from ecs_gpu.sim.controllers.asg_fast_path import AsgFastPath
from ecs_gpu.sim.controllers.base import HOOKS, Context, Controller, hooks
from ecs_gpu.sim.controllers.demand import ConcurrencySeries
from ecs_gpu.sim.controllers.fast_path import FastPathLayer
from ecs_gpu.sim.controllers.fast_scale_in import FastScaleInLayer
from ecs_gpu.sim.controllers.managed_scaling import InstanceLayer
from ecs_gpu.sim.controllers.request_count import RequestCount
from ecs_gpu.sim.controllers.schedule import ScheduleLayer
from ecs_gpu.sim.controllers.sleep import SleepLayer
from ecs_gpu.sim.controllers.spot import SpotMarket
from ecs_gpu.sim.controllers.target_tracking import ServiceLayer
from ecs_gpu.sim.controllers.wake import WakeLayer
from ecs_gpu.sim.controllers.warm_pool import WarmPoolBilling, warm_pool
from ecs_gpu.sim.controllers.zero import ZeroRecorder
from ecs_gpu.sim.fleet import Fleet
from ecs_gpu.sim.markets import Markets
from ecs_gpu.sim.metrics import (
    DemandPipeline,
    MetricPipeline,
    RequestCountSeries,
    tracked_series,
)
from ecs_gpu.sim.params import SimParams
from ecs_gpu.sim.serving import RequestQueue

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
    "concurrency_per_task",
)

# A getter of each column's value from a row tuple.
_COL = {c: itemgetter(j) for j, c in enumerate(TIMELINE_COLUMNS)}

ProgressFn = Callable[[int, int], None]
Start = Literal["warm", "cold"]


@dataclass(frozen=True)
class SimResult:
    params: SimParams
    step_s: float
    seed: int
    # One tuple per step, in TIMELINE_COLUMNS order (Recorder.rows).
    rows: list[tuple[float, ...]] = field(repr=False)
    summary: dict[str, Any]

    @cached_property
    def timeline(self) -> dict[str, list[float]]:
        """One list per column of TIMELINE_COLUMNS, built on first use.

        Most runs (comparisons, sweeps, benchmarks) read only the summary, so
        the columns are not built for them.
        """
        return {c: list(map(itemgetter(j), self.rows)) for j, c in enumerate(TIMELINE_COLUMNS)}


# Steps shorter than a second resolve nothing more (every delay and interval
# the model has is whole seconds) and only multiply the run's length.
MIN_STEP_S = 1.0
# numpy's Poisson sampler refuses means near 2**63; no fleet this models serves
# a billion requests a second, so a larger load is a mis-set --rate-scale.
MAX_OFFERED_RPS = 1e9


def check_step(step_s: float, p: SimParams | None = None) -> None:
    """Refuse a step that does not divide the one-minute alarm period evenly.

    With ``p`` on the concurrency signal, also one that splits its 10-s
    datapoints: each step must publish a whole number of them (or one every
    few steps), or the 2-of-2 alarm counts the wrong window.
    """
    ok = math.isfinite(step_s) and step_s >= MIN_STEP_S
    per_min = P.ALARM_PERIOD_S / step_s if ok else 0.0
    if not ok or abs(per_min - round(per_min)) > 1e-9:
        raise BadInputError(
            f"--step = {step_s!r} s: must be at least {MIN_STEP_S:g} s and divide the "
            f"{P.ALARM_PERIOD_S:g}-second alarm period. Fix: use 1, 2, 5, 10, 15, 20, 30 or 60."
        )
    if p is None or (
        p.tracking.target_concurrency is None and p.fast_path is None and p.fast_scale_in is None
    ):
        return
    interval = p.demand.publish_interval_s
    per = interval / step_s if step_s <= interval else step_s / interval
    if abs(per - round(per)) > 1e-9:
        raise BadInputError(
            f"--step = {step_s:g} s: the concurrency signal publishes every {interval:g} s, "
            "so a step must divide that or be a multiple of it. Fix: use 1, 2, 5, 10, 20, "
            "30 or 60."
        )


def oracle_gpu_hours(p: SimParams, offered_rps: list[float], step_s: float) -> float:
    """GPU-hours of a fleet with perfect foresight and no start-up delay.

    Each step it runs exactly the tasks that keep the GPUs at the target
    (SimParams.tasks_for_rate, vectorized) and the fewest instances that hold
    them (never below the floor).
    """
    rates = np.asarray(offered_rps, dtype=np.float64)
    per_task = p.rps_per_task_at_target
    need = np.where(rates > 0, np.ceil(rates / per_task - 1e-9), 0.0)
    tasks = np.clip(need, p.min_tasks, p.max_tasks).astype(np.int64)
    counts = np.bincount(tasks)
    inst_s = sum(int(c) * p.instances_for_tasks(k) for k, c in enumerate(counts) if c)
    return inst_s * step_s * p.gpus_per_instance / 3600.0


class Recorder:
    """The timeline, one row per step, and the run's overload episodes."""

    __slots__ = (
        "busy_gpu_s",
        "held_gpu_s",
        "instance_s",
        "latencies",
        "overload_s",
        "overload_since",
        "rows",
        "step_s",
    )

    def __init__(self, step_s: float) -> None:
        self.step_s = step_s
        # One tuple per step in TIMELINE_COLUMNS order: one append a step,
        # turned into columns once at the end.
        self.rows: list[tuple[float, ...]] = []
        self.instance_s = self.overload_s = self.busy_gpu_s = self.held_gpu_s = 0.0
        self.latencies: list[float] = []
        self.overload_since: float | None = None

    def account(self, t: float, rate: float, cap: float, u: float, ready: int, ninst: int) -> None:
        """Count one step: overload episodes, busy and held GPU time, instance time.

        An overload episode runs from the first step with load above ready
        capacity to the next step without.
        """
        step_s = self.step_s
        if rate > cap + 1e-9:
            self.overload_s += step_s
            if self.overload_since is None:
                self.overload_since = t
        elif self.overload_since is not None:
            self.latencies.append(t - self.overload_since)
            self.overload_since = None
        if ready:
            self.busy_gpu_s += u * step_s
            self.held_gpu_s += step_s
        self.instance_s += ninst * step_s


def _warm_start(
    p: SimParams, fleet: Fleet, first_rps: float, markets: Markets | None = None
) -> int:
    """The steady state for the first step's load: tasks at the target, on the fewest instances.

    With Spot, the strategy's split of them: the Spot ones first, then On-Demand.
    """
    desired = p.tasks_for_rate(first_rps)
    count = p.instances_for_tasks(desired)
    on_spot = 0 if markets is None else min(markets.needs(desired)[1], count)
    for j in range(count):
        if j < on_spot and markets is not None:
            at = -p.managed_scaling.instance_warmup_s
            inst = fleet.launch(at, 0.0, 0.0, spot=True, interrupt_at=markets.interrupt_at(0.0))
            markets.watch(inst)
        else:
            fleet.launch(-p.managed_scaling.instance_warmup_s, 0.0, 0.0)
    for j in range(desired):
        inst = fleet.registered[j % len(fleet.registered)]
        if p.placement == "binpack":
            inst = fleet.registered[j // p.tasks_per_instance]
        fleet.add_ready_task(inst, 0.0)
    return desired


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

    Each step: the fleet finishes boots, pulls and loads; once a minute the
    metric pipeline publishes and the controllers decide (the service layer,
    then the instance layer); the step policies evaluate; the ready tasks
    serve; the pipelines sample; the recorder writes the row. Which
    controllers run, and in which order, is :func:`_controllers`'.
    """
    check_step(step_s, p)
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
    ctx, metrics, controllers = _start(
        p, step_s, seed, start, float(offered_rps[0]) if nsteps else 0.0, rng, nsteps
    )
    rec = Recorder(step_s)
    _loop(ctx, metrics, controllers, rec, counts, offered, p.task_capacity_rps, progress)
    # Keys every summary has, 0 when the design lacks the controller that counts them.
    extra: dict[str, Any] = {
        "signal": p.tracking.signal,
        "fast_path_scale_outs": 0,
        "fast_scale_ins": 0,
        "warm_pool_starts": 0,
        "warm_pool_returned": 0,
    }
    for c in controllers:
        extra |= c.summary(ctx)
    cost = _cost(p, rec.instance_s, ctx.pool_running_s, ctx.pool_stopped_s, ctx.spot_s)
    summary = _summary(p, step_s, seed, start, offered, ctx.queue, rec, cost)
    return SimResult(p, step_s, seed, rec.rows, {**summary, **extra})


def _start(
    p: SimParams,
    step_s: float,
    seed: int,
    start: Start,
    first_rps: float,
    rng: np.random.Generator,
    nsteps: int,
) -> tuple[Context, MetricPipeline, list[Controller]]:
    """The fleet at t = 0 (warm: steady at the first step's load; cold: the floor only),
    the run's context, its metric pipeline and its controllers, each in its state at t = 0."""
    fleet = Fleet(p.tasks_per_instance, p.image_pull_s, p.model_load_s, p.placement)
    jitter = p.boot_jitter_fraction

    def boot_time() -> float:
        return p.instance_boot_s * (1.0 + jitter * (2.0 * float(rng.random()) - 1.0))

    markets = Markets(p, seed) if p.spot.percent else None
    if start == "warm":
        desired = _warm_start(p, fleet, first_rps, markets)
    else:
        desired = p.min_tasks
        for _ in range(p.floor_instances):
            fleet.launch(0.0, boot_time(), p.managed_scaling.instance_warmup_s)
        fleet.provisioning = desired
    ctx = Context(step_s, nsteps * step_s, fleet, RequestQueue(p.max_queue_s), p.mean_request_s)
    metrics = MetricPipeline(p, step_s)
    controllers = _controllers(p, ctx, metrics, desired, boot_time, markets, start == "warm")
    for c in controllers:
        c.on_start(ctx)
    return ctx, metrics, controllers


def _controllers(
    p: SimParams,
    ctx: Context,
    metrics: MetricPipeline,
    desired: int,
    boot_time: Callable[[], float],
    markets: Markets | None,
    warm: bool,
) -> list[Controller]:
    """The controllers ``p`` has, in the order their hooks run within a step.

    The series the policies read close first; the step paths before the
    minute's policies (the fast path's alarm state holds target tracking's
    scale-in); the schedule before target tracking, the wake and sleep after
    it, the instance layer last; then what the run bills and records.
    """
    demand = _demand(p, ctx.step_s)
    tracked = tracked_series(p, metrics, demand)
    # The ALBRequestCountPerTarget policy (no datapoint without a request).
    requests = None
    if (count_target := p.tracking.request_count_target) is not None:
        requests = RequestCount(RequestCountSeries(p.metrics.alb_metric_delay_s))
        tracked.append((requests.counts.series, count_target))
    ctx.service = ServiceLayer(p, desired, tracked, metrics.cpu)
    pool = warm_pool(p, ctx.fleet, warm)
    ctx.instances = InstanceLayer(p, boot_time, pool, markets, metrics.host)
    wake = sleep = None
    if p.wake is not None:
        delay = max(p.metrics.alb_metric_delay_s, p.metrics.ecs_metric_delay_s)
        wake = WakeLayer(p.wake, delay)
    if p.sleep is not None:
        sleep = SleepLayer(p.sleep, p.metrics.alb_metric_delay_s)
    built = [
        requests,
        None if demand is None else ConcurrencySeries(demand, p.demand.backlog_drain_s),
        *_step_paths(p, demand),
        ScheduleLayer(p.schedule.actions, p.schedule.start_utc) if p.schedule.actions else None,
        ctx.service,
        wake,
        sleep,
        ctx.instances,
        None if pool is None else WarmPoolBilling(pool),
        # Only a design that may run no task records idle cost and waits.
        ZeroRecorder(ctx.step_s, p.gpus_per_instance, wake, sleep) if p.scales_to_zero else None,
        None if markets is None else SpotMarket(markets, p.spot),
    ]
    return [c for c in built if c is not None]


def _demand(p: SimParams, step_s: float) -> DemandPipeline | None:
    """The sidecars' concurrency series, when a policy or step path reads it."""
    fp = p.fast_path
    if p.tracking.target_concurrency is None and fp is None and p.fast_scale_in is None:
        return None
    return DemandPipeline(p, step_s, 1 if fp is None else fp.evaluation_periods)


def _step_paths(p: SimParams, demand: DemandPipeline | None) -> list[Controller | None]:
    """The fast path, its what-if on the ASG, and the fast scale-in, when the design has them."""
    if demand is None:
        return []
    fast = asg = scale_in = None
    if p.fast_path is not None:
        ends = p.tracking.fast_path_ends_scale_in_cooldown
        fast = FastPathLayer(p.fast_path, p.max_tasks, demand.fast, ends_scale_in_cooldown=ends)
        if p.managed_scaling.instance_fast_path:
            warmup = p.managed_scaling.instance_warmup_s
            asg = AsgFastPath(p.fast_path, p.max_instances, warmup, fast)
    if p.fast_scale_in is not None:
        shared = p.tracking.shared_scale_in_cooldown
        scale_in = FastScaleInLayer(
            p.fast_scale_in, p.min_tasks, demand.scale_in, shared_cooldown=shared
        )
    return [fast, asg, scale_in]


def _loop(
    ctx: Context,
    metrics: MetricPipeline,
    controllers: list[Controller],
    rec: Recorder,
    counts: list[float],
    offered: list[float],
    cap_rps: float,
    progress: ProgressFn | None,
) -> None:
    """Every step of the run, in the order :func:`simulate` describes; one row each."""
    step_s = ctx.step_s
    fleet, service, instances = ctx.fleet, ctx.service, ctx.instances
    nsteps = len(offered)
    steps_per_min = round(P.ALARM_PERIOD_S / step_s)
    starts, minutes, steps, billing, served_hooks = (hooks(controllers, h) for h in HOOKS)
    nan = math.nan
    progress_every = max(1, nsteps // 200)
    # Bound methods, and each hook list tested before it is walked: the loop runs
    # once per step (120,960 times for 14 days).
    serve, sample, account, row = ctx.queue.serve, metrics.sample, rec.account, rec.rows.append
    close_minute = metrics.close_minute
    gpu_series = metrics.gpu
    queue = ctx.queue
    for i in range(nsteps):
        t = i * step_s
        if t >= fleet.next_event:
            fleet.advance(t)
        if starts:
            for hook in starts:
                hook(t, ctx)
        if fleet.provisioning:
            fleet.place(t)
        if i and i % steps_per_min == 0:
            # Close the minute that just ended and let the alarms look.
            close_minute(t)
            for hook in minutes:
                hook(t, ctx)
        if steps:
            for hook in steps:
                hook(t, ctx)
        ready = fleet.ready
        # Tasks on a noticed Spot instance serve until it is reclaimed.
        cap = (ready + fleet.leaving_ready) * cap_rps
        arrivals = counts[i]
        served, u = serve(arrivals, cap, step_s)
        rate = offered[i]
        nreg = len(fleet.registered)
        ninst = len(fleet.instances)
        running = fleet.running
        billed = ninst
        if billing:
            for count in billing:
                billed += count(t, ctx)
        account(t, rate, cap, u, ready, billed)
        if served_hooks:
            ctx.i = i
            ctx.arrivals = arrivals
            ctx.served = served
            ctx.rate = rate
            ctx.billed = billed
            for hook in served_hooks:
                hook(t, ctx)
        task_cpu, host = sample(i, t, ready, running, fleet.placed, nreg, u)
        hist = gpu_series.history
        row(
            (
                t,
                rate,
                arrivals / step_s,
                cap,
                served / step_s,
                queue.queue,
                queue.unserved,
                service.desired,
                running,
                ready,
                ninst,
                nreg,
                nan if not hist or hist[-1] is None else hist[-1],
                100.0 * u if ready else nan,
                task_cpu,
                host,
                instances.last_cpr,
                ctx.conc,
            )
        )
        if progress is not None and i % progress_every == 0:
            progress(i, nsteps)
    if progress is not None:
        progress(nsteps, nsteps)


def _cost(
    p: SimParams,
    instance_s: float,
    pool_running_s: float,
    pool_stopped_s: float,
    spot_s: float = 0.0,
) -> dict[str, float]:
    """The warm pool's cost as its own figure, and the total cost that includes it.

    Running pool instances (warming, or a Running pool) are instance time,
    already in instance_s and GPU-hours; stopped ones bill their volume only
    (p.warm_pool.volume_usd_per_hour) and serve nothing, so GPU-hours leave them out.
    Spot instance time (part of instance_s) bills at the Spot price.
    """
    running_usd = pool_running_s / 3600.0 * p.price_usd_per_hour
    volume_usd = pool_stopped_s / 3600.0 * p.warm_pool.volume_usd_per_hour
    instances_usd = (instance_s - spot_s) / 3600.0 * p.price_usd_per_hour
    if spot_s:
        instances_usd += spot_s / 3600.0 * p.spot.price_usd_per_hour
    return {
        "cost_usd": round(instances_usd + volume_usd, 2),
        "warm_pool_cost_usd": round(running_usd + volume_usd, 2),
        "warm_pool_running_instance_hours": round(pool_running_s / 3600.0, 4),
        "warm_pool_stopped_instance_hours": round(pool_stopped_s / 3600.0, 4),
    }


def _summary(
    p: SimParams,
    step_s: float,
    seed: int,
    start: Start,
    offered: list[float],
    queue: RequestQueue,
    rec: Recorder,
    cost: dict[str, float],
) -> dict[str, Any]:
    rows = rec.rows
    latencies = rec.latencies
    duration = len(offered) * step_s
    gpu_hours = rec.instance_s * p.gpus_per_instance / 3600.0
    oracle = oracle_gpu_hours(p, offered, step_s)
    gm = [v for v in map(_COL["gpu_metric"], rows) if not math.isnan(v)]
    return {
        "duration_s": duration,
        "step_s": step_s,
        "seed": seed,
        "start": start,
        "instance_type": p.instance_type,
        "gpu_target_percent": p.tracking.gpu_target_percent,
        "gpu_metric": P.GPU_METRIC_NAME[p.metrics.gpu_metric_scope],
        "gpu_hours": round(gpu_hours, 4),
        "oracle_gpu_hours": round(oracle, 4),
        "gpu_hours_ratio_to_oracle": round(gpu_hours / oracle, 4) if oracle else None,
        "instance_hours": round(rec.instance_s / 3600.0, 4),
        **cost,
        "overload_seconds": rec.overload_s,
        "offered_requests": round(queue.offered, 1),
        "served_requests": round(queue.served, 1),
        "unserved_requests": round(queue.unserved, 1),
        "scale_out_latency_s": latencies,
        "worst_scale_out_latency_s": max(latencies) if latencies else None,
        "overloaded_at_end_s": (
            None if rec.overload_since is None else duration - rec.overload_since
        ),
        "max_tasks": int(max(map(_COL["running_tasks"], rows), default=0)),
        "max_desired_tasks": int(max(map(_COL["desired_tasks"], rows), default=0)),
        "max_instances": int(max(map(_COL["instances"], rows), default=0)),
        # The metric the GPU policy sees against the utilization of the GPUs
        # that ready tasks hold: with "asg-average" the gap is idle GPUs
        # diluting the average; with "task-gpus", reserved GPUs not serving yet.
        "gpu_metric_mean_percent": round(sum(gm) / len(gm), 2) if gm else None,
        "task_gpu_util_mean_percent": (
            round(100.0 * rec.busy_gpu_s / rec.held_gpu_s, 2) if rec.held_gpu_s else None
        ),
    }
