"""Every number the simulator uses, with where it comes from.

AWS constants cite the row of the project's researched semantics
(docs/simulator.md "Sources", copied from aws-semantics.md) and the URL that
row cites. Anything AWS does not document is a named field of
:class:`SimParams`, or of the group of the controller that reads it
(``tracking``, ``managed_scaling``, ``metrics``, ...), with a default and a
comment that says so. :func:`from_spec` is the one reader of the spec.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Final, Literal, Self

from ecs_gpu import catalog
from ecs_gpu.contracts import demand_metric, gpu_metric, schedule, signals
from ecs_gpu.contracts.signals import SERIES, Signal, SignalPlan
from ecs_gpu.design import Design, managed_scaling, spot
from ecs_gpu.design.paths import fast_path
from ecs_gpu.design.paths.fast_path import FastPath
from ecs_gpu.design.paths.fast_scale_in import FastScaleIn
from ecs_gpu.design.paths.sleep import SleepPath
from ecs_gpu.design.paths.wake import ALB_LAG_S, WakePath
from ecs_gpu.errors import BadInputError
from ecs_gpu.spec import Spec

# --- Application Auto Scaling target tracking (aws-semantics §1) -------------------
# AlarmHigh: 3 of 3 one-minute datapoints above the target. [obs]
# https://github.com/aws/containers-roadmap/issues/1208 and a terraformer export.
TT_HIGH_DATAPOINTS: Final = 3
# AlarmLow: 15 of 15 one-minute datapoints below ~0.9 x target. [obs] same issue;
# "usually more than 10% lower": awsdocs/application-auto-scaling-user-guide@8e4642f
# doc_source/application-auto-scaling-target-tracking.md
TT_LOW_DATAPOINTS: Final = signals.TRACKING_LOW_DATAPOINTS
TT_LOW_FRACTION: Final = 0.9
# Target-tracking alarms evaluate one-minute datapoints; Application Auto
# Scaling has no Period field (§1 "High resolution",
# https://docs.aws.amazon.com/autoscaling/application/APIReference/API_TargetTrackingMetricStat.html).
ALARM_PERIOD_S: Final = gpu_metric.PERIOD_S

# --- ECS capacity provider managed scaling (aws-semantics §2) ----------------------
# CPR AlarmHigh 1 of 1 and AlarmLow 15 of 15 one-minute datapoints. [obs]
# https://github.com/aws/containers-roadmap/issues/638 and /900, /1220
CPR_HIGH_DATAPOINTS: Final = 1
CPR_LOW_DATAPOINTS: Final = 15
# First scale-out from zero instances reads CPR = 200, i.e. two instances.
# https://github.com/aws/containers-roadmap/issues/961 (AWS PM) and
# awsdocs/amazon-ecs-developer-guide@49232cf cluster-auto-scaling.md
CPR_FROM_ZERO: Final = 200.0
# ManagedScaling defaults: minimumScalingStepSize 1, maximumScalingStepSize
# 10000, instanceWarmupPeriod 300 s.
# https://docs.aws.amazon.com/AmazonECS/latest/APIReference/API_ManagedScaling.html
DEFAULT_MIN_STEP: Final = 1
DEFAULT_MAX_STEP: Final = 10000
DEFAULT_INSTANCE_WARMUP_S: Final = 300.0
# Managed scale-in steps down by "more than one instance and less than 50%"
# a minute. awsdocs/amazon-ecs-developer-guide@49232cf cluster-auto-scaling.md
# "Scale-in considerations".
SCALE_IN_MAX_FRACTION: Final = 0.5


# --- The fast path: a step-scaling policy on a 10-s alarm (ecs_gpu.design.paths.fast_path) -------
# An alarm in ALARM invokes its Auto Scaling action when it enters the state,
# then once per minute while it stays there (aws-semantics §1 "Alarm -> policy
# invocation", AlarmThatSendsEmail.md L18).
ALARM_REINVOKE_S: Final = 60.0

# --- Warm pools (aws-semantics §4) ---------------------------------------------
# With ECS_WARM_POOLS_CHECK the agent polls the target lifecycle state every
# 60 s, so a Running pool instance registers up to about 60 s after it is
# taken (aws-semantics §4 "Agent behaviour"); a Stopped or Hibernated one
# first starts (WarmPool.warm_start_s, a guess from [simulation]). The
# template's instance warm-up reads the same constant (managed_scaling).
WARM_RUNNING_REGISTER_S: Final = managed_scaling.WARM_RUNNING_REGISTER_S

# Where the simulated clock's 0 falls in UTC, for [[scaling.schedule]]'s cron:
# a Monday midnight, so a trace's first day is a weekday starting at 00:00.
# Traces carry no date the model reads (docs/simulator.md "Scale to zero").
DEFAULT_START_UTC: Final = datetime(2024, 1, 1, tzinfo=UTC)

# A scheduled action: when it runs, and the min_tasks and max_tasks it sets.
ScheduledAction = tuple[schedule.Cron, int, int]

# Which datapoints a target-tracking scale-in reads (TargetTracking.scale_in_basis).
ScaleInBasis = Literal["window-max", "latest"]

# [scaling] gpu_metric -> the series the simulated GPU policy averages (each
# GPU signal's sim_gpu_scope in signals.SERIES).
GPU_METRIC_SCOPE: Final[dict[Signal, Literal["asg", "tasks"]]] = {
    series.signal: scope
    for series in SERIES.values()
    if (scope := series.sim_gpu_scope) is not None
}
GPU_METRIC_NAME: Final[dict[str, str]] = {v: k for k, v in GPU_METRIC_SCOPE.items()}

# The SimParams field that holds each policy's target, by its [scaling] key
# (signals.SignalSeries.target_key): a new signal's target is a field and a row here.
TARGET_FIELD: Final[dict[str, str]] = {
    "gpu_target_percent": "gpu_target_percent",
    "target_concurrency_per_task": "target_concurrency",
}


class _Group:
    """A copy with some fields changed, for every group and SimParams itself."""

    __slots__ = ()

    def with_(self, **changes: object) -> Self:
        """A copy with some fields changed (a sweep, a design comparison, a what-if)."""
        return replace(self, **changes)  # type: ignore[type-var]


@dataclass(frozen=True, slots=True)
class TargetTracking(_Group):
    """The service layer's policies (controllers.target_tracking), from [scaling]."""

    # [scaling] signal: "concurrency" tracks target_concurrency per task (the
    # sidecar's series, ecs_gpu.contracts.demand_metric) and has no GPU policy unless
    # gpu_guard; the GPU signals track metrics.gpu_metric_scope's series.
    signal: Signal
    gpu_target_percent: float
    cpu_target_percent: float
    # Kept so a run records its spec; it cannot change a decision in this
    # model (controllers.target_tracking.ServiceScaler says why).
    scale_out_cooldown_s: float
    scale_in_cooldown_s: float
    gpu_guard: bool = False
    target_concurrency: float | None = None
    # [load_balancer] request_count_target: the ALBRequestCountPerTarget
    # policy's target (requests per task a minute), None without one.
    request_count_target: float | None = None
    # Which datapoints a scale-in proposal reads (the scale-in guard,
    # controllers.target_tracking.scale_in_capacity). AWS documents the guard
    # ("no scale-in if removing capacity would likely push the metric above the
    # target", aws-semantics §1) but not the data it judges "likely" by.
    # "window-max": the highest of the AlarmLow window's 15 datapoints, so no
    # datapoint of that window would have breached the target with fewer tasks;
    # "latest": the last datapoint only, which lets one quiet minute remove a
    # task the next busy minute needs again (flapping at steady load).
    scale_in_basis: ScaleInBasis = "window-max"
    # The CPU policy's scale-in: off (DisableScaleIn) when the service may run
    # no task, since an idle server's CPU would hold the last one (infra/scaling.py).
    cpu_scale_in: bool = True
    # Whether target tracking's ScaleInCooldown and the step policy's Cooldown
    # hold each other's scale-ins: not documented (aws-semantics §9 "Step
    # policy cooldown, scale-in" [gap]). False: each policy has its own.
    shared_scale_in_cooldown: bool = False
    # What-if, never from a spec: the fast path's scale-out ends target
    # tracking's scale-in cooldown, as AWS says another alarm's scale-out does
    # (aws-semantics §1). Off, the model keeps the cooldown; whether target
    # tracking's next scale-in, from a low datapoint still in its alarm, then
    # undoes the fast path's tasks in AWS (the two "at the same time" give the
    # larger capacity, §9) is not documented: benchmarks/lull.py measures both.
    fast_path_ends_scale_in_cooldown: bool = False


@dataclass(frozen=True, slots=True)
class ManagedScaling(_Group):
    """The instance layer's policies on the ASG (controllers.managed_scaling)."""

    target_capacity_percent: float
    # ManagedScaling settings: the API defaults here; from_spec sets what the
    # template deploys (ecs_gpu.design.managed_scaling).
    min_scaling_step: int = DEFAULT_MIN_STEP
    max_scaling_step: int = DEFAULT_MAX_STEP
    instance_warmup_s: float = DEFAULT_INSTANCE_WARMUP_S
    # CapacityProviderReservation is published every minute (§2); the lag to
    # the ASG alarm is not documented. Assumed one period.
    cpr_delay_s: float = 60.0
    # What-if, never from a spec: managed scaling's CPR low alarm needs this
    # many one-minute datapoints. AWS owns that alarm and its 15 (§2), so only
    # benchmarks/stress.py --scale-in-frontier sets it: instances that stay
    # longer after the fast scale-in empties them.
    cpr_low_datapoints: int = CPR_LOW_DATAPOINTS
    # [simulation] host_cpu_policy_target_percent: a host-CPU target-tracking
    # policy on the same ASG (the anti-pattern), None without one.
    host_cpu_policy_target_percent: float | None = None
    # What-if, never from a spec: the fast-path alarm also adds instances
    # through an ASG step policy, which AWS says a capacity provider's group
    # must not have (controllers.asg_fast_path).
    instance_fast_path: bool = False


@dataclass(frozen=True, slots=True)
class Metrics(_Group):
    """The metric pipeline (sim/metrics.py): what the fleet reports and when alarms see it."""

    # What the GPU policy tracks; from_spec sets it from [scaling] gpu_metric,
    # the one source of truth ("task-gpus" -> "tasks", "asg-average" -> "asg").
    # "asg": the agent's series (gpu_metric: one per ASG, every GPU of every
    # instance, idle ones at 0 %). "tasks": the deployed metric math, that
    # series x 100 / AWS/ECS GPUReservation (gpu_metric.TASK_GPU_EXPRESSION).
    gpu_metric_scope: Literal["asg", "tasks"] = "tasks"
    # The GPU metric pipeline (ecs_gpu.contracts.gpu_metric is the contract).
    collection_interval_s: float = gpu_metric.COLLECTION_INTERVAL_S
    # Age of a sample when CloudWatch has it. The agent flushes every
    # force_flush_interval (default 60 s, aws-semantics §5 "Flush"); where in
    # that window a sample lands is not documented, so we take the worst case.
    agent_flush_delay_s: float = gpu_metric.FORCE_FLUSH_INTERVAL_S
    # ECS publishes service CPUUtilization once a minute; AWS does not document
    # the publication lag. Assumed one period.
    ecs_metric_delay_s: float = 60.0
    # The ALB publishes its one-minute datapoints while requests flow (§10);
    # when an alarm sees one is not documented: wake.ALB_LAG_S, which verify
    # wake's detection bound reads too.
    alb_metric_delay_s: float = float(ALB_LAG_S)
    # GPUReservation counts GPUs "reserved by running tasks" (aws-semantics §3,
    # cloudwatch-metrics.md@49232cf). ECS reserves a task's GPUs when it places
    # the task, so we count tasks still pulling the image (PENDING) too; AWS
    # does not say which task states count. False counts only tasks whose
    # container started (RUNNING, which includes model load).
    reservation_includes_pending: bool = True
    # Host CPU besides tasks (OS, ECS and CloudWatch agents): not documented;
    # an estimate, used only by the host-CPU ASG policy anti-pattern.
    host_cpu_baseline_percent: float = 3.0


@dataclass(frozen=True, slots=True)
class Demand(_Group):
    """The sidecars' concurrency series (metrics.DemandPipeline, controllers.demand)."""

    # The sidecar publishes every 10 s (demand_metric.PUBLISH_INTERVAL_S).
    publish_interval_s: float = float(demand_metric.PUBLISH_INTERVAL_S)
    # PutMetricData to an alarm that sees the datapoint: AWS documents no
    # figure for high-resolution metrics. A guess: 5 s.
    metric_delay_s: float = 5.0
    # [scaling] demand_estimate = "arrival-rate": the sidecar publishes the
    # arrival rate x mean request time plus the backlog over this window
    # (demand_metric.py "The estimate"); None: requests in flight (running +
    # waiting), the "in-flight" estimate.
    backlog_drain_s: float | None = None
    # Target tracking reads the one-minute concurrency datapoint capped at
    # this multiple of the target: from_spec sets fast_path.TRACKING_CAP_RATIO
    # (1.0) with the fast path on, the metric math the template deploys;
    # None: uncapped.
    tracking_cap_ratio: float | None = None


@dataclass(frozen=True, slots=True)
class WarmPool(_Group):
    """[capacity.warm_pool] (controllers.warm_pool); ``min_size`` None without a pool."""

    min_size: int | None = None
    # MaxGroupPreparedCapacity; from_spec sets what the template deploys
    # (WarmPoolSpec.prepared_capacity). None, a what-if only: AWS's default,
    # the ASG's max size.
    max_prepared: int | None = None
    state: Literal["Stopped", "Hibernated", "Running"] = "Stopped"
    # What-if, never from a spec: instances that scale in return to the pool
    # (ReuseOnScaleIn), which ECS does not allow (aws-semantics §9).
    reuse_on_scale_in: bool = False
    # A Stopped or Hibernated pool instance bills only its root volume:
    # catalog.gp3_usd_per_hour of [capacity] root_volume_* (dated gp3 price).
    volume_usd_per_hour: float = 0.0
    # [simulation] warm_start_s: a Stopped pool instance, start to ECS
    # registration (a guess: AWS publishes no figure).
    warm_start_s: float = 60.0

    @property
    def register_s(self) -> float:
        """A pool instance, taken by a scale-out, to ECS registration."""
        if self.state == "Running":
            return WARM_RUNNING_REGISTER_S
        return self.warm_start_s


@dataclass(frozen=True, slots=True)
class Spot(_Group):
    """[capacity.spot] (controllers.spot); ``percent`` 0 without a Spot group.

    The strategy (ecs_gpu.design.spot): ``on_demand_base`` tasks on
    On-Demand, ``percent`` of the rest on Spot.
    """

    percent: int = 0
    on_demand_base: int = 0
    # A Spot instance-hour (spot.price_usd_per_hour: the dated discount).
    price_usd_per_hour: float = 0.0
    # Interruptions per Spot instance-hour: [simulation] key or the Advisor
    # band's rate (spot.interruption_rate_per_hour). Each Spot instance draws
    # its own from the run's seed.
    interruptions_per_hour: float = 0.0
    # EC2's two-minute notice: the instance drains (ECS_ENABLE_SPOT_INSTANCE_DRAINING)
    # and its tasks serve until it is reclaimed.
    notice_s: float = spot.NOTICE_S


@dataclass(frozen=True, slots=True)
class Schedule(_Group):
    """[[scaling.schedule]] (controllers.schedule): the actions, in the spec's order."""

    actions: tuple[ScheduledAction, ...] = ()
    # t = 0 in UTC, for the actions' cron (DEFAULT_START_UTC says why).
    start_utc: datetime = DEFAULT_START_UTC


@dataclass(frozen=True, slots=True)
class SimParams(_Group):
    """All inputs of one simulation run: the spec's numbers plus model parameters.

    The fleet, the load and the service's bounds are flat; each controller's
    settings are a group (``tracking``, ``managed_scaling``, ``fast_path``, ...).
    """

    # From [capacity] and the catalog.
    instance_type: str
    gpus_per_instance: int
    instance_cpu_units: int
    price_usd_per_hour: float
    min_instances: int
    max_instances: int
    # The ODCR floor: managed scaling never goes below the reserved instances.
    reserved_instances: int
    # From [service] and the catalog.
    gpus_per_task: int
    task_cpu_units: int
    tasks_per_instance: int
    # From [scaling]: the scalable target's bounds.
    min_tasks: int
    max_tasks: int
    # From [simulation].
    task_capacity_rps: float
    instance_boot_s: float
    image_pull_s: float
    model_load_s: float
    cpu_idle_percent: float
    cpu_percent_at_full_load: float
    max_queue_s: float
    # The service layer and the instance layer, always present.
    tracking: TargetTracking
    managed_scaling: ManagedScaling
    # [simulation] mean_request_s: a request holds a slot this long, so a
    # task serving r req/s holds r x mean_request_s requests (Little's law).
    mean_request_s: float = 8.0
    # Boot time varies per instance; AWS publishes no distribution (§4 [gap]).
    # Each launch draws uniformly from boot x [1 - j, 1 + j] with the run's seed.
    boot_jitter_fraction: float = 0.2
    # Arrivals inside a trace window are not constant; with True each step's
    # request count is Poisson-distributed around the trace rate (seeded).
    poisson_arrivals: bool = True
    # Service placement strategy: "spread" is the ECS service default
    # (aws-semantics §3); "binpack" fills one instance before the next.
    placement: Literal["spread", "binpack"] = "spread"
    metrics: Metrics = Metrics()
    demand: Demand = Demand()
    # The step paths the template deploys (ecs_gpu.design.paths), None when off.
    fast_path: FastPath | None = None
    fast_scale_in: FastScaleIn | None = None
    wake: WakePath | None = None
    sleep: SleepPath | None = None
    schedule: Schedule = Schedule()
    warm_pool: WarmPool = WarmPool()
    spot: Spot = Spot()

    @property
    def signal_plan(self) -> SignalPlan:
        """The policies this design runs (signals.py), from its signal, guard and fast path."""
        tt = self.tracking
        return SignalPlan.from_parts(tt.signal, tt.gpu_guard, self.fast_path is not None)

    def target(self, signal: Signal) -> float | None:
        """The value ``signal``'s target-tracking policy holds (None: the design sets none)."""
        value: float | None = getattr(self.tracking, TARGET_FIELD[SERIES[signal].target_key])
        return value

    @property
    def targets(self) -> list[tuple[Signal, float]]:
        """Each policy this design runs and its target, in signals.SignalPlan.tracked's order."""
        return [(s, t) for s in self.signal_plan.tracked if (t := self.target(s)) is not None]

    @property
    def gpu_policy(self) -> bool:
        """Whether a GPU target-tracking policy runs: the GPU signals, or the guard."""
        return self.signal_plan.tracks_gpu

    @property
    def scales_to_zero(self) -> bool:
        """Whether the service may run no task: min_tasks 0, or an action that sets it."""
        return self.min_tasks == 0 or any(mn == 0 for _, mn, _ in self.schedule.actions)

    @property
    def floor_instances(self) -> int:
        """Instances managed scaling never removes: the ASG minimum or the ODCR."""
        return max(self.min_instances, self.reserved_instances)

    @property
    def target_share(self) -> float:
        """The share of a task's full load its main policy holds it at: the GPU target,
        or on the concurrency signal the target over the requests a task holds at full
        load (task_capacity_rps x mean_request_s, Little's law)."""
        tc = self.tracking.target_concurrency
        if self.signal_plan.tracks_concurrency and tc is not None:
            return min(1.0, tc / (self.task_capacity_rps * self.mean_request_s))
        return self.tracking.gpu_target_percent / 100.0

    @property
    def rps_per_task_at_target(self) -> float:
        return self.task_capacity_rps * self.target_share

    def tasks_for_rate(self, rps: float) -> int:
        """Tasks that serve ``rps`` at exactly the design's target (the oracle's rule)."""
        per_task = self.rps_per_task_at_target
        need = math.ceil(rps / per_task - 1e-9) if rps > 0 else 0
        return min(max(need, self.min_tasks), self.max_tasks)

    def instances_for_tasks(self, tasks: int) -> int:
        need = -(-tasks // self.tasks_per_instance)
        return min(max(need, self.floor_instances), self.max_instances)

    def with_(self, **changes: object) -> Self:
        """A copy with some fields changed (a sweep, a design comparison, a what-if).

        A group takes a new group, or a dict of the fields to change in it:
        ``p.with_(tracking={"scale_in_basis": "latest"}, poisson_arrivals=False)``.
        """
        for name, value in changes.items():
            group = getattr(self, name)
            if isinstance(value, Mapping) and isinstance(group, _Group):
                changes[name] = group.with_(**value)
        return replace(self, **changes)  # type: ignore[arg-type]


def from_spec(spec: Spec) -> SimParams:
    """Read every simulator input from a validated spec, as the template deploys it."""
    return from_design(Design.of(spec))


def from_design(design: Design) -> SimParams:
    """Read every simulator input from a resolved spec: the numbers the template deploys."""
    spec = design.spec
    it = spec.instance
    cap, sc, sim, svc = spec.capacity, spec.scaling, spec.simulation, spec.service
    return SimParams(
        instance_type=it.name,
        gpus_per_instance=it.gpus,
        instance_cpu_units=it.cpu_units,
        price_usd_per_hour=it.price_usd_per_hour,
        min_instances=cap.min_instances,
        max_instances=cap.max_instances,
        reserved_instances=cap.reserved_instances or 0,
        gpus_per_task=svc.gpus_per_task,
        task_cpu_units=svc.cpu_units,
        tasks_per_instance=spec.tasks_per_instance,
        min_tasks=sc.min_tasks,
        max_tasks=sc.max_tasks,
        task_capacity_rps=float(sim.task_capacity_rps),
        instance_boot_s=float(sim.instance_boot_s),
        image_pull_s=float(sim.image_pull_s),
        # Container start to serving: from model_size_gib when set, the same
        # figure the template's health-check start period and grace use.
        model_load_s=float(design.startup.model_ready_s),
        cpu_idle_percent=float(sim.cpu_idle_percent),
        cpu_percent_at_full_load=float(sim.cpu_percent_at_full_load),
        max_queue_s=float(sim.max_queue_s),
        tracking=_tracking(design),
        managed_scaling=ManagedScaling(
            target_capacity_percent=float(cap.target_capacity_percent),
            # The managed-scaling settings the template deploys (one source).
            min_scaling_step=managed_scaling.MIN_SCALING_STEP,
            max_scaling_step=design.managed_scaling.max_scaling_step,
            instance_warmup_s=float(design.managed_scaling.instance_warmup_s),
            host_cpu_policy_target_percent=(
                None
                if sim.host_cpu_policy_target_percent is None
                else float(sim.host_cpu_policy_target_percent)
            ),
        ),
        mean_request_s=float(sim.mean_request_s),
        metrics=Metrics(gpu_metric_scope=GPU_METRIC_SCOPE[design.signals.gpu_series]),
        demand=Demand(
            backlog_drain_s=(
                float(sc.backlog_drain_s) if sc.demand_estimate == "arrival-rate" else None
            ),
            tracking_cap_ratio=(
                None if design.tracking_cap is None else fast_path.TRACKING_CAP_RATIO
            ),
        ),
        # The step tables and alarms the template deploys (one source).
        fast_path=design.fast_path,
        fast_scale_in=design.fast_scale_in,
        wake=design.wake,
        sleep=design.sleep,
        schedule=Schedule(
            tuple((schedule.parse(e.cron), e.min_tasks, e.max_tasks) for e in sc.schedule)
        ),
        warm_pool=_warm_pool(spec),
        spot=_spot(design),
    )


def _tracking(design: Design) -> TargetTracking:
    """The service's target-tracking policies, as infra/scaling.py deploys them."""
    spec = design.spec
    sc = spec.scaling
    plan = design.signals
    lb = spec.load_balancer
    return TargetTracking(
        signal=sc.signal,
        gpu_target_percent=float(sc.gpu_target_percent),
        cpu_target_percent=float(sc.cpu_target_percent),
        scale_out_cooldown_s=float(sc.scale_out_cooldown_s),
        scale_in_cooldown_s=float(sc.scale_in_cooldown_s),
        gpu_guard=sc.gpu_guard,
        # Only the concurrency signal deploys the policy (infra/scaling.py); on a
        # GPU signal the key is a note (spec NOTES), not a second policy.
        target_concurrency=(
            float(tc)
            if plan.tracks_concurrency and (tc := sc.target_concurrency_per_task) is not None
            else None
        ),
        request_count_target=(
            None
            if lb is None or lb.request_count_target is None
            else float(lb.request_count_target)
        ),
        # The CPU policy's scale-in, as deployed.
        cpu_scale_in=not design.scales_to_zero,
    )


def _warm_pool(spec: Spec) -> WarmPool:
    """[capacity.warm_pool] as the template deploys it; the root volume's price either way."""
    cap = spec.capacity
    pool = cap.warm_pool
    return WarmPool(
        min_size=None if pool is None else pool.min_size,
        max_prepared=None if pool is None else pool.prepared_capacity,
        state="Stopped" if pool is None else pool.pool_state,
        volume_usd_per_hour=catalog.gp3_usd_per_hour(
            cap.root_volume_gib, cap.root_volume_iops, cap.root_volume_throughput_mibps
        ),
        warm_start_s=float(spec.simulation.warm_start_s),
    )


def _spot(design: Design) -> Spot:
    """The design's [capacity.spot]; the defaults (no Spot) without one."""
    sp = design.spec.capacity.spot
    if sp is None or design.spot is None:
        return Spot()
    price = design.spot.price_usd_per_hour
    if price is None:
        missing = ", ".join(design.spot.missing_discounts)
        raise BadInputError(
            f"[capacity.spot] instance_types: no dated Spot discount for {missing} "
            "(catalog.SPOT_DISCOUNTS has none for its family), so the simulator cannot price "
            "Spot. Fix: set [simulation] spot_discount_percent to the Spot Instance Advisor's "
            "'Savings over On-Demand' for those types in your Region, e.g. 60."
        )
    return Spot(
        percent=sp.spot_percent,
        on_demand_base=sp.on_demand_base,
        price_usd_per_hour=price,
        interruptions_per_hour=design.spot_interruptions_per_hour,
    )
