"""The discrete-time loop over the simulator's units; no I/O.

Units, each with its own state: the fleet (fleet.py: boot, placement, pull,
load), the request queue (serving.py), the metric pipeline (metrics.py), the
service and instance layers (controllers.py) and the recorder (here).

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
from ecs_gpu.sim.controllers import (
    AsgFastPath,
    FastPathLayer,
    FastScaleInLayer,
    InstanceLayer,
    ScheduleLayer,
    ServiceLayer,
    SleepLayer,
    WakeLayer,
    apply_desired,
    largest_capacity,
)
from ecs_gpu.sim.fleet import Fleet, WarmPool
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
        p.target_concurrency is None and p.fast_path is None and p.fast_scale_in is None
    ):
        return
    interval = p.demand_publish_interval_s
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
            at = -p.instance_warmup_s
            inst = fleet.launch(at, 0.0, 0.0, spot=True, interrupt_at=markets.interrupt_at(0.0))
            markets.watch(inst)
        else:
            fleet.launch(-p.instance_warmup_s, 0.0, 0.0)
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
    metric pipeline publishes, the service layer and then the instance layer
    decide; the ready tasks serve; the pipeline samples; the recorder writes
    the row.
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
    steps_per_min = round(P.ALARM_PERIOD_S / step_s)

    fleet = Fleet(p.tasks_per_instance, p.image_pull_s, p.model_load_s, p.placement)
    jitter = p.boot_jitter_fraction

    def boot_time() -> float:
        return p.instance_boot_s * (1.0 + jitter * (2.0 * float(rng.random()) - 1.0))

    markets = Markets(p, seed) if p.spot_percent else None
    if start == "warm":
        desired = _warm_start(p, fleet, float(offered_rps[0]) if nsteps else 0.0, markets)
    else:
        desired = p.min_tasks
        for _ in range(p.floor_instances):
            fleet.launch(0.0, boot_time(), p.instance_warmup_s)
        fleet.provisioning = desired

    metrics = MetricPipeline(p, step_s)
    demand, fast = _demand(p, step_s)
    scale_in = (
        None
        if p.fast_scale_in is None or demand is None
        else FastScaleInLayer(p.fast_scale_in, p.min_tasks)
    )
    tracked = tracked_series(p, metrics, demand)
    # The ALBRequestCountPerTarget policy (no datapoint without a request).
    requests: RequestCountSeries | None = None
    if p.request_count_target is not None:
        requests = RequestCountSeries(p.alb_metric_delay_s)
        tracked.append((requests.series, p.request_count_target))
    service = ServiceLayer(p, desired, tracked, metrics.cpu)
    sched = ScheduleLayer(p.schedule, p.start_utc) if p.schedule else None
    if sched is not None and (state := sched.initial()) is not None:
        _schedule_action(0.0, fleet, service, state)
    wake = (
        None
        if p.wake is None
        else WakeLayer(p.wake, max(p.alb_metric_delay_s, p.ecs_metric_delay_s))
    )
    sleep = None if p.sleep is None else SleepLayer(p.sleep, p.alb_metric_delay_s)
    # Only a design that may run no task records idle cost and waits (the loop is hot).
    zero = ZeroRecorder(step_s) if p.scales_to_zero else None
    pool = _warm_pool(p, fleet, start)
    instances = InstanceLayer(p, boot_time, pool, markets)
    asg_fast = (
        AsgFastPath(p.fast_path, p.max_instances, p.instance_warmup_s)
        if p.fast_path is not None and p.instance_fast_path
        else None
    )
    mean_request_s = p.mean_request_s
    drain_s = p.backlog_drain_s
    host_policy = metrics.host if p.host_cpu_policy_target_percent is not None else None
    queue = RequestQueue(p.max_queue_s)
    rec = Recorder(step_s)
    cap_rps = p.task_capacity_rps
    nan = math.nan
    progress_every = max(1, nsteps // 200)
    # Pool instance time: running (warming, or a Running pool) and stopped.
    pool_running_s = pool_stopped_s = 0.0
    # Spot instance time, the noticed ones until reclaimed included.
    spot_s = 0.0

    # Bound methods: the loop runs once per step (120,960 times for 14 days).
    serve, sample, account, row = queue.serve, metrics.sample, rec.account, rec.rows.append
    gpu_series = metrics.gpu
    for i in range(nsteps):
        t = i * step_s
        if t >= fleet.next_event:
            fleet.advance(t)
        if markets is not None:
            markets.step(t, fleet)
        if fleet.provisioning:
            fleet.place(t)
        # The desired count before this instant's policies: one that changes
        # it fired now (target tracking at a minute, the fast path).
        before = service.desired
        if i and i % steps_per_min == 0:
            # Close the minute that just ended and let the alarms look.
            metrics.close_minute(t)
            if requests is not None:
                requests.close_minute(t)
            hold_in = False
            if demand is not None:
                demand.close_minute(t)
                if fast is not None:
                    # The fast alarm's state now, not the previous step's: a
                    # step that enters ALARM also holds target tracking's scale-in.
                    demand.fast.visible(t)
                    hold_in = fast.alarm_value(demand.fast.history) is not None
            if sched is not None and (state := sched.due(t)) is not None:
                _schedule_action(t, fleet, service, state)
            service.decide(t, fleet, hold_in)
            if wake is not None:
                wake.close_minute(t)
                want = wake.decide(t, fleet.running, service.desired, service.scaler.max_tasks)
                if want != service.desired:
                    service.desired = want
                    apply_desired(t, fleet, want)
            if sleep is not None:
                sleep.close_minute(t)
                want = sleep.decide(t, service.desired, service.scaler.min_tasks)
                if want != service.desired:
                    service.desired = want
                    apply_desired(t, fleet, want)
            instances.decide(t, fleet, host_policy)
        if fast is not None and demand is not None:
            # The 10-second alarm evaluates every period, between the minutes.
            demand.fast.visible(t)
            want = fast.decide(t, fleet, service.desired, demand.fast.history)
            # A scheduled action may have lowered the maximum below the spec's.
            want = min(want, max(service.desired, service.scaler.max_tasks))
            if want != service.desired:
                if want > service.desired and p.fast_path_ends_scale_in_cooldown:
                    service.scaler.last_scale_in = -math.inf
                service.desired = want
                apply_desired(t, fleet, want)
            if asg_fast is not None and fast.invoked is not None:
                for _ in range(asg_fast.instances_to_add(t, fast.invoked, len(fleet.instances))):
                    instances.launch(t, fleet)
        if scale_in is not None and demand is not None:
            _fast_scale_in(p, t, fleet, service, scale_in, demand, before)

        ready = fleet.ready
        # Tasks on a noticed Spot instance serve until it is reclaimed.
        cap = (ready + fleet.leaving_ready) * cap_rps
        arrivals = counts[i]
        served, u = serve(arrivals, cap, step_s)
        rate = offered[i]
        nreg = len(fleet.registered)
        ninst = len(fleet.instances)
        running = fleet.running
        conc = nan
        if demand is not None:
            # Over every RUNNING task (a loading task's sidecar publishes 0):
            # in flight, Little's law for the requests in service plus the
            # queue; the arrival-rate estimate, the rate requests arrive x
            # their mean time plus the queue drained over backlog_drain_s
            # (demand_metric.py "The estimate": in steady state both are the
            # requests in service).
            if not ready:
                # No server answers: every sidecar publishes its start's 0 (the load
                # balancer turns the requests away, none reaches a server's counters).
                total = 0.0
            elif drain_s is None:
                total = served / step_s * mean_request_s + queue.queue
            else:
                total = mean_request_s * (arrivals / step_s + queue.queue / drain_s)
            conc = demand.sample(i, t + step_s, total, running)
        if markets is not None:
            billed_spot = fleet.spot_count + len(fleet.draining)
            spot_s += billed_spot * step_s
            ninst_billed = ninst + len(fleet.draining)
        else:
            ninst_billed = ninst
        if pool is None:
            billed = ninst_billed
        else:
            in_pool = pool.billed(t)
            billed = ninst_billed + in_pool
            pool_running_s += in_pool * step_s
            pool_stopped_s += pool.stopped(t) * step_s
        account(t, rate, cap, u, ready, billed)
        if requests is not None:
            # Routed to the targets that serve (ready, and noticed Spot ones).
            requests.sample(arrivals, ready + fleet.leaving_ready)
        if wake is not None:
            wake.sample(arrivals, running)
        if sleep is not None:
            # In flight: the requests in service (Little's law) and waiting.
            sleep.sample(arrivals, served / step_s * mean_request_s + queue.queue, running)
        if zero is not None:
            zero.account(t, rate, arrivals, ready, billed)
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
                conc,
            )
        )
        if progress is not None and i % progress_every == 0:
            progress(i, nsteps)
    if progress is not None:
        progress(nsteps, nsteps)
    extra: dict[str, Any] = {
        "signal": p.signal,
        "fast_path_scale_outs": 0 if fast is None else fast.actions,
        "fast_scale_ins": 0 if scale_in is None else scale_in.actions,
        "warm_pool_starts": 0 if pool is None else pool.starts,
        "warm_pool_returned": 0 if pool is None else pool.returned,
        **(
            {}
            if zero is None
            else zero.summary(
                p,
                nsteps * step_s,
                0 if wake is None else wake.actions,
                0 if sleep is None else sleep.actions,
            )
        ),
    }
    cost = _cost(p, rec.instance_s, pool_running_s, pool_stopped_s, spot_s)
    if markets is not None:
        extra |= {
            "spot_percent": p.spot_percent,
            "on_demand_base": p.on_demand_base,
            "spot_instance_hours": round(spot_s / 3600.0, 4),
            "spot_interruptions": markets.interruptions,
            "spot_replaced_tasks": markets.replaced,
            "spot_interruptions_per_instance_hour": p.spot_interruptions_per_hour,
            "spot_price_usd_per_hour": round(p.spot_price_usd_per_hour, 4),
        }
    summary = _summary(p, step_s, seed, start, offered, queue, rec, cost)
    return SimResult(p, step_s, seed, rec.rows, {**summary, **extra})


def _schedule_action(t: float, fleet: Fleet, service: ServiceLayer, state: tuple[int, int]) -> None:
    """A scheduled action: the target's new min and max, and the desired count within them."""
    mn, mx = state
    service.scaler.min_tasks, service.scaler.max_tasks = mn, mx
    want = min(max(service.desired, mn), mx)
    if want != service.desired:
        service.desired = want
        apply_desired(t, fleet, want)


class ZeroRecorder:
    """What scale to zero costs and saves: idle GPU time and the first requests' waits.

    Idle: steps with no offered load; what is billed then (instances and a
    running pool) is the fleet paying for nothing. A wait starts at the first
    request that arrives while no task is ready and ends when one is: what
    the first request after zero waits for (docs/simulator.md "Scale to zero").
    """

    __slots__ = ("idle_billed_s", "idle_s", "since", "step_s", "waits")

    def __init__(self, step_s: float) -> None:
        self.step_s = step_s
        self.idle_s = self.idle_billed_s = 0.0
        self.waits: list[float] = []
        self.since: float | None = None

    def account(self, t: float, rate: float, arrivals: float, ready: int, billed: int) -> None:
        if rate <= 0:
            self.idle_s += self.step_s
            self.idle_billed_s += billed * self.step_s
        if ready:
            if self.since is not None:
                self.waits.append(t - self.since)
                self.since = None
        elif arrivals > 0 and self.since is None:
            self.since = t

    def summary(self, p: SimParams, duration: float, wakes: int, sleeps: int) -> dict[str, Any]:
        waits = self.waits
        return {
            "idle_hours": round(self.idle_s / 3600.0, 4),
            "idle_gpu_hours": round(self.idle_billed_s * p.gpus_per_instance / 3600.0, 4),
            "wake_scale_outs": wakes,
            "sleep_scale_ins": sleeps,
            "cold_start_waits_s": waits,
            "worst_cold_start_wait_s": max(waits) if waits else None,
            "waiting_at_end_s": None if self.since is None else duration - self.since,
        }


def _fast_scale_in(
    p: SimParams,
    t: float,
    fleet: Fleet,
    service: ServiceLayer,
    scale_in: FastScaleInLayer,
    demand: DemandPipeline,
    before: int,
) -> None:
    """The fast scale-in's 10-second evaluation, beside what fired at the same instant.

    Target tracking does not block it (aws-semantics §9); a policy that
    fired at the same instant (target tracking at the minute, the fast path)
    is combined with it by :func:`largest_capacity`. With
    ``p.shared_scale_in_cooldown`` (the [gap] of §9) target tracking's
    scale-in cooldown also holds it, and its scale-in starts target
    tracking's.
    """
    demand.scale_in.visible(t)
    scaler = service.scaler
    if p.shared_scale_in_cooldown and t < scaler.last_scale_in + scaler.scale_in_cooldown_s:
        return
    want = scale_in.proposal(t, fleet.running, before, demand.scale_in.history)
    if want is None:
        return
    # A scheduled action may have raised the minimum above the spec's.
    want = max(want, min(before, scaler.min_tasks))
    others = [service.desired] if service.desired != before else []
    if largest_capacity([want, *others]) != want:
        return  # a larger capacity fired at the same instant
    scale_in.took(t)
    if p.shared_scale_in_cooldown:
        scaler.last_scale_in = t
    if want != service.desired:
        service.desired = want
        apply_desired(t, fleet, want)


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
    (p.pool_volume_usd_per_hour) and serve nothing, so GPU-hours leave them out.
    Spot instance time (part of instance_s) bills at the Spot price.
    """
    running_usd = pool_running_s / 3600.0 * p.price_usd_per_hour
    volume_usd = pool_stopped_s / 3600.0 * p.pool_volume_usd_per_hour
    instances_usd = (instance_s - spot_s) / 3600.0 * p.price_usd_per_hour
    if spot_s:
        instances_usd += spot_s / 3600.0 * p.spot_price_usd_per_hour
    return {
        "cost_usd": round(instances_usd + volume_usd, 2),
        "warm_pool_cost_usd": round(running_usd + volume_usd, 2),
        "warm_pool_running_instance_hours": round(pool_running_s / 3600.0, 4),
        "warm_pool_stopped_instance_hours": round(pool_stopped_s / 3600.0, 4),
    }


def _demand(p: SimParams, step_s: float) -> tuple[DemandPipeline | None, FastPathLayer | None]:
    """The concurrency series and the fast path, when the spec has them."""
    fp = p.fast_path
    if p.target_concurrency is None and fp is None and p.fast_scale_in is None:
        return None, None
    demand = DemandPipeline(p, step_s, 1 if fp is None else fp.evaluation_periods)
    return demand, None if fp is None else FastPathLayer(fp, p.max_tasks)


def _warm_pool(p: SimParams, fleet: Fleet, start: Start) -> WarmPool | None:
    """The warm pool, full and prepared on a warm start, preparing on a cold one."""
    if p.warm_pool_min_size is None:
        return None
    prepared = p.max_instances if p.warm_pool_max_prepared is None else p.warm_pool_max_prepared
    pool = WarmPool(
        p.warm_pool_min_size,
        prepared,
        # Boot, then the warm unit's image pull, then stop.
        p.instance_boot_s + p.image_pull_s,
        p.warm_register_s,
        billed_running=p.warm_pool_state == "Running",
        reuse_on_scale_in=p.warm_pool_reuse_on_scale_in,
    )
    on_demand = len(fleet.instances) - fleet.spot_count
    pool.fill(0.0, on_demand, ready_at=-math.inf if start == "warm" else None)
    return pool


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
        "gpu_target_percent": p.gpu_target_percent,
        "gpu_metric": P.GPU_METRIC_NAME[p.gpu_metric_scope],
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
