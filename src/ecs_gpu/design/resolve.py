"""The spec resolved once into the design it deploys: :meth:`Design.of`.

Everything the template, the simulator, validate, verify and doctor need to know
about a spec beyond its own keys is worked out here, once, from the rules of the
modules beside this one (start-up times, managed scaling, Spot, the step paths).
The consumers read the :class:`Design`; none calls those rules on the spec again,
so the template and the simulator agree by structure, not by convention. A check
that needs a design, not a spec, takes one (:func:`check_woken_task`).
"""

from __future__ import annotations

from dataclasses import dataclass

from ecs_gpu.contracts.signals import SignalPlan
from ecs_gpu.design import managed_scaling, spot, startup
from ecs_gpu.design.paths import fast_path, fast_scale_in, sleep, wake
from ecs_gpu.design.paths.fast_path import FastPath
from ecs_gpu.design.paths.fast_scale_in import FastScaleIn
from ecs_gpu.design.paths.sleep import SleepPath
from ecs_gpu.design.paths.wake import WakePath
from ecs_gpu.design.spot import Strategy
from ecs_gpu.design.startup import HealthTimings, ModelStart
from ecs_gpu.errors import SpecError
from ecs_gpu.spec import Spec
from ecs_gpu.spec.messages import Problem


@dataclass(frozen=True)
class Startup:
    """How long a task takes to serve, and the health checks that follow from it."""

    # Container start to serving: download, load and warm-up (or model_load_s).
    model_ready_s: float
    # Task placed to serving: the image pull, then the model.
    task_ready_s: float
    # How long a RUNNING task may still not serve (the sleep path outlasts it).
    running_to_healthy_s: float
    # The model's start estimate with its inputs (validate's note).
    model: ModelStart
    # The container health check and the service's grace period.
    health: HealthTimings


@dataclass(frozen=True)
class ManagedScaling:
    """A group's capacity-provider managed scaling and the starts it waits for."""

    # A new instance to a serving task: boot, image pull, model.
    cold_start_s: float
    # A warm-pool instance to ECS registration.
    warm_register_s: float
    # A warm-pool instance to a serving task.
    pooled_start_s: float
    # Every scale-out up to max_instances comes from the warm pool.
    pool_covers_scale_out: bool
    # The provider's instance warm-up (and the group's default warm-up and cooldown).
    instance_warmup_s: int
    # The most instances one managed-scaling step adds.
    max_scaling_step: int


@dataclass(frozen=True)
class Spot:
    """Spot capacity as deployed and as the simulator prices it (with [capacity.spot])."""

    # The service's capacity-provider strategy: the On-Demand base and both weights.
    strategy: Strategy
    # The Spot group as the On-Demand group's builders read a spec.
    group: Spec
    # The Spot group's managed scaling (no warm pool: its warm-up is the cold start's).
    managed_scaling: ManagedScaling
    price_usd_per_hour: float | None
    # Listed types with no discount: no [simulation] key and no cited figure.
    missing_discounts: tuple[str, ...]


@dataclass(frozen=True)
class Zero:
    """Scale to zero: what wakes the service, what puts it to sleep, what a wake costs."""

    # Alarm periods without a request before the service sleeps.
    quiet_minutes: int
    # From the wake to a serving task.
    start_s: float
    # The woken task is the Spot group's (it starts cold there).
    wakes_on_spot: bool
    # The first instance after zero comes from the warm pool.
    pooled_wake: bool
    # None without a load balancer to count requests at.
    wake: WakePath | None
    sleep: SleepPath | None
    # Why target tracking would stop the woken task before it serves (empty: it cannot).
    unprotected_wake: tuple[Problem, ...]


@dataclass(frozen=True)
class Design:
    """A spec and everything it deploys, worked out once (:meth:`of`)."""

    spec: Spec
    signals: SignalPlan
    startup: Startup
    # The On-Demand group's (the Spot group's is spot.managed_scaling).
    managed_scaling: ManagedScaling
    # None without [capacity.spot].
    spot: Spot | None
    # The simulator's Spot interruptions per instance-hour (the key, else the band's).
    spot_interruptions_per_hour: float
    # The On-Demand group may hold no instance while tasks run on Spot.
    on_demand_may_be_empty: bool
    fast_path: FastPath | None
    # The cap on target tracking's concurrency datapoint (None: uncapped).
    tracking_cap: float | None
    fast_scale_in: FastScaleIn | None
    # None unless the service may run no task.
    zero: Zero | None

    @classmethod
    def of(cls, spec: Spec) -> Design:
        """Resolve ``spec`` (a valid one: the spec's rules have passed)."""
        return cls(
            spec=spec,
            signals=SignalPlan.of(spec.scaling),
            startup=_startup(spec),
            managed_scaling=_managed_scaling(spec),
            spot=_spot(spec),
            spot_interruptions_per_hour=spot.interruption_rate_per_hour(spec),
            on_demand_may_be_empty=spot.on_demand_may_be_empty(spec),
            fast_path=fast_path.fast_path(spec),
            tracking_cap=fast_path.tracking_cap(spec),
            fast_scale_in=fast_scale_in.fast_scale_in(spec),
            zero=_zero(spec),
        )

    @property
    def strategy(self) -> Strategy | None:
        """The service's capacity-provider strategy; None: one provider, On-Demand."""
        return None if self.spot is None else self.spot.strategy

    @property
    def scales_to_zero(self) -> bool:
        """Whether the service may run no task (min_tasks = 0, or a schedule entry's)."""
        return self.zero is not None

    @property
    def wake(self) -> WakePath | None:
        return None if self.zero is None else self.zero.wake

    @property
    def sleep(self) -> SleepPath | None:
        return None if self.zero is None else self.zero.sleep


def check_woken_task(design: Design, path: str = "spec") -> None:
    """Refuse (:class:`SpecError`, exit 2, naming ``path``) a design whose woken task
    target tracking would stop before it serves (``wake.unprotected_wake``). Synth,
    diff, deploy, validate, plan, simulate and compare call it after the spec's own
    rules; the construct applies it too."""
    problems = () if design.zero is None else design.zero.unprotected_wake
    if problems:
        raise SpecError(path, [p.format(path) for p in problems])


def _startup(spec: Spec) -> Startup:
    return Startup(
        model_ready_s=startup.model_ready_s(spec),
        task_ready_s=startup.task_ready_s(spec),
        running_to_healthy_s=startup.running_to_healthy_s(spec),
        model=startup.model_start(spec),
        health=startup.health_timings(spec),
    )


def _managed_scaling(spec: Spec) -> ManagedScaling:
    return ManagedScaling(
        cold_start_s=managed_scaling.cold_start_s(spec),
        warm_register_s=managed_scaling.warm_register_s(spec),
        pooled_start_s=managed_scaling.pooled_start_s(spec),
        pool_covers_scale_out=managed_scaling.pool_covers_scale_out(spec),
        instance_warmup_s=managed_scaling.instance_warmup_s(spec),
        max_scaling_step=managed_scaling.max_scaling_step(spec),
    )


def _spot(spec: Spec) -> Spot | None:
    strategy = spot.strategy(spec)
    if strategy is None:
        return None
    group = spot.group_spec(spec)
    return Spot(
        strategy=strategy,
        group=group,
        managed_scaling=_managed_scaling(group),
        price_usd_per_hour=spot.price_usd_per_hour(spec),
        missing_discounts=tuple(spot.missing_discounts(spec)),
    )


def _zero(spec: Spec) -> Zero | None:
    if not wake.scales_to_zero(spec):
        return None
    return Zero(
        quiet_minutes=wake.quiet_minutes(spec),
        start_s=wake.start_s(spec),
        wakes_on_spot=wake.wakes_on_spot(spec),
        pooled_wake=wake.pooled_wake(spec),
        wake=wake.wake_path(spec),
        sleep=sleep.sleep_path(spec),
        unprotected_wake=tuple(wake.unprotected_wake(spec)),
    )
