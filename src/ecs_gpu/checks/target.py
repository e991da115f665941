"""What doctor collects for: the deployment's names and the spec's settings
(``checks/kinds.TargetNames``, the snapshot's ``_collection.target``), built
from a spec, from names, or from a cluster and service alone."""

from __future__ import annotations

from ecs_gpu import host
from ecs_gpu.checks.snapshot import ScheduleTarget, SpotTarget, TargetNames, WarmPoolTarget
from ecs_gpu.contracts import schedule
from ecs_gpu.contracts.naming import Names
from ecs_gpu.contracts.signals import Signal
from ecs_gpu.design import Design
from ecs_gpu.spec import Spec


class WarmPool(WarmPoolTarget):
    """snapshot.WarmPoolTarget, built from the spec's [capacity.warm_pool]."""

    @classmethod
    def from_spec(cls, spec: Spec, names: Names) -> WarmPool | None:
        wp = spec.capacity.warm_pool
        if wp is None:
            return None
        # The construct names everything after the deployment's base
        # (infra/service.py), the launch hook included.
        deployed = spec.model_copy(
            update={"service": spec.service.model_copy(update={"name": names.service_name})}
        )
        return cls(
            min_size=wp.min_size,
            # What the template sets: the spec's value or its default.
            max_prepared=wp.prepared_capacity,
            pool_state=wp.pool_state,
            hook_name=host.warm_pool_hook_name(deployed),
            hook_timeout_s=host.hook_timeout_s(deployed),
        )


def _spot_target(spec: Spec, names: Names) -> SpotTarget | None:
    """snapshot.SpotTarget, from the spec's [capacity.spot] (None without one)."""
    sp = spec.capacity.spot
    if sp is None:
        return None
    return SpotTarget(
        asg=names.spot_asg,
        capacity_provider=names.spot_capacity_provider,
        on_demand_base=sp.on_demand_base,
        spot_percent=sp.spot_percent,
        gpu_missing_alarm=names.spot_gpu_metric_missing_alarm,
        shortfall_alarm=names.spot_capacity_shortfall_alarm,
    )


def _schedule_targets(spec: Spec) -> list[ScheduleTarget]:
    """snapshot.ScheduleTarget per [[scaling.schedule]] entry: the scheduled action's
    Schedule as ecs_gpu.contracts.schedule writes it, and its MinCapacity and MaxCapacity."""
    return [
        ScheduleTarget(
            schedule=schedule.parse(e.cron).expression, min_tasks=e.min_tasks, max_tasks=e.max_tasks
        )
        for e in spec.scaling.schedule
    ]


class Target(TargetNames):
    """What to collect: snapshot.TargetNames (``_collection.target``), with its constructors."""

    @classmethod
    def from_names(
        cls,
        names: Names,
        signal: Signal | None = None,
        *,
        gpu_guard: bool | None = None,
        fast_path_threshold: float | None = None,
        fast_path_cooldown_s: int | None = None,
        fast_scale_in_threshold: float | None = None,
        warm_pool: WarmPoolTarget | None = None,
        spot: SpotTarget | None = None,
        schedule: list[ScheduleTarget] | None = None,
        sleep_path: bool | None = None,
        sleep_minutes: int | None = None,
    ) -> Target:
        return cls(
            cluster=names.cluster,
            service=names.service,
            asg=names.asg,
            capacity_provider=names.capacity_provider,
            stack=names.stack,
            missing_metric_alarm=names.gpu_metric_missing_alarm,
            signal=signal,
            gpu_guard=gpu_guard,
            fast_path_threshold=fast_path_threshold,
            fast_path_cooldown_s=fast_path_cooldown_s,
            fast_scale_in_threshold=fast_scale_in_threshold,
            warm_pool=warm_pool,
            spot=spot,
            schedule=schedule,
            sleep_path=sleep_path,
            sleep_minutes=sleep_minutes,
        )

    @classmethod
    def from_spec(cls, spec: Spec, names: Names) -> Target:
        """:meth:`from_design` for a spec not yet resolved."""
        return cls.from_design(Design.of(spec), names)

    @classmethod
    def from_design(cls, design: Design, names: Names) -> Target:
        """``names`` plus what the design's [scaling] and warm pool deploy, for the checks."""
        spec = design.spec
        fp, fsi, sp = design.fast_path, design.fast_scale_in, design.sleep
        return cls.from_names(
            names,
            signal=spec.scaling.signal,
            gpu_guard=spec.scaling.gpu_guard,
            fast_path_threshold=None if fp is None else fp.threshold,
            fast_path_cooldown_s=None if fp is None else fp.cooldown_s,
            fast_scale_in_threshold=None if fsi is None else fsi.threshold,
            warm_pool=WarmPool.from_spec(spec, names),
            spot=_spot_target(spec, names),
            schedule=_schedule_targets(spec),
            sleep_path=sp is not None,
            sleep_minutes=None if sp is None else sp.minutes,
        )

    @classmethod
    def from_cluster_service(cls, cluster: str, service: str) -> Target:
        # Without a spec the ASG comes from the capacity provider; the
        # missing-metric alarm is looked up under the name ecs-gpu would give it.
        return cls(
            cluster=cluster,
            service=service,
            missing_metric_alarm=Names(service).gpu_metric_missing_alarm,
        )
