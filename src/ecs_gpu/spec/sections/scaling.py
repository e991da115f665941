"""[scaling]: the task bounds, the signal and its targets, cooldowns and the fast path."""

from __future__ import annotations

from typing import Annotated, Any, Final, Literal

from pydantic import Field, field_validator, model_validator

from ecs_gpu.contracts import schedule
from ecs_gpu.contracts.demand_metric import DEFAULT_BACKLOG_DRAIN_S
from ecs_gpu.contracts.signals import DEFAULT_GPU_SIGNAL, GpuSeries, Signal, SignalPlan
from ecs_gpu.spec.messages import RuleError
from ecs_gpu.spec.sections.base import _Section

# "Scheduled actions per scalable target: 200", not adjustable (Application Auto
# Scaling quotas, aws-semantics §10); the template adds one per entry and no other.
MAX_SCHEDULED_ACTIONS: Final = 200


class ScheduleSpec(_Section):
    """One [[scaling.schedule]] entry: a scheduled action on the task count.

    The cron subset is :mod:`ecs_gpu.contracts.schedule`'s.
    """

    # Application Auto Scaling's six cron fields, in UTC (no time zone is set),
    # e.g. "0 8 ? * MON-FRI *"; `cron(...)` around them is accepted.
    cron: str
    # The scalable target's new MinCapacity and MaxCapacity from that minute on
    # (ScalableTargetAction); 0 and 0 put the service to sleep.
    min_tasks: Annotated[int, Field(ge=0)]
    max_tasks: Annotated[int, Field(ge=0)]

    @field_validator("cron")
    @classmethod
    def _cron(cls, v: str) -> str:
        try:
            return schedule.parse(v).text
        except schedule.CronError as e:
            raise RuleError(
                str(e), f"correct it (six fields, in UTC), e.g. cron = {schedule.EXAMPLE!r}"
            ) from e

    @model_validator(mode="after")
    def _bounds(self) -> ScheduleSpec:
        if self.min_tasks > self.max_tasks:
            raise RuleError(
                f"min_tasks {self.min_tasks} is above max_tasks {self.max_tasks}",
                "make min_tasks <= max_tasks",
            )
        return self


class ScalingSpec(_Section):
    # 0 scales to zero, which needs a wake path (ecs_gpu.design.paths.wake): with no task
    # there is no GPU, CPU or concurrency datapoint, and target tracking does
    # not scale on insufficient data (aws-semantics.md §1 "Rounding / missing
    # data", §10); the spec rules require a load balancer or a schedule.
    min_tasks: Annotated[int, Field(ge=0)] = 1
    max_tasks: Annotated[int, Field(ge=1)]
    # At least 1 %: below that any noise is above target (scale to max_tasks),
    # and the simulator divides each task's capacity by the target.
    gpu_target_percent: Annotated[float, Field(ge=1, le=100)] = 70.0
    cpu_target_percent: Annotated[float, Field(ge=1, le=100)] = 70.0
    scale_in_cooldown_s: Annotated[int, Field(ge=0, le=3600)] = 300
    scale_out_cooldown_s: Annotated[int, Field(ge=0, le=3600)] = 60
    # What the service scales on. "concurrency": in-flight + waiting requests
    # per task, scraped from the server's Prometheus metrics (demand_metric.py;
    # the default when [service.metrics] is present). "task-gpus": utilization
    # of the GPUs tasks hold, by metric math over the agent's ASG average and
    # ECS's GPUReservation (gpu_metric.py; the default otherwise);
    # "asg-average": the agent's ASG-wide average, which counts idle, unreserved
    # GPUs as 0 % (the reference module's design). The old key `gpu_metric` is
    # read as this one.
    signal: Signal = DEFAULT_GPU_SIGNAL
    # Requests in flight or waiting per task that target tracking holds. At
    # least 0.1 (desired tasks = concurrency / target must stay finite); at
    # most 100,000, far above any server's batch (vLLM's max_num_seqs: 256-1024).
    target_concurrency_per_task: Annotated[float, Field(ge=0.1, le=100000)] | None = None
    # With "concurrency": also track GPU utilization (gpu_target_percent) as a
    # guard. Off by default: continuous batching keeps NVML utilization near
    # 100 % with a single request, which would hold the fleet at max_tasks.
    gpu_guard: bool = False
    # The fast path: a step-scaling policy on a 10-second alarm. Default on with
    # "concurrency"; the GPU signals have no 10-second series.
    fast_scale_out: bool | None = None
    # The fast path fires when per-task concurrency exceeds this percentage of
    # the target. 110 % by default: with the fast path on, target tracking's
    # datapoint is capped at the target, so the fast path does every scale-out
    # (design/paths/fast_path.py; docs/benchmarks.md "Pay for what you serve:
    # the concurrency designs on every load").
    panic_threshold_percent: Annotated[float, Field(ge=110, le=1000)] = 110.0
    # What the sidecar publishes (demand_metric.py "The estimate"):
    # "arrival-rate", the rate requests arrive x their mean time plus the
    # backlog drained over backlog_drain_s; "in-flight", requests running +
    # waiting, which counts a backlog as standing load.
    demand_estimate: Literal["arrival-rate", "in-flight"] = "arrival-rate"
    backlog_drain_s: Annotated[int, Field(ge=10, le=3600)] = DEFAULT_BACKLOG_DRAIN_S
    # The fast scale-in: a step-scaling policy on a 10-second low alarm that
    # removes at most a quarter of the tasks a minute (fast_scale_in.py).
    # Off unless true, and only with "concurrency": the GPU signals have no
    # 10-second series. None (unset) is off.
    fast_scale_in: bool | None = None
    # [[scaling.schedule]]: scheduled actions that set min_tasks and max_tasks at
    # cron times in UTC (a staging fleet that sleeps at night); empty: none.
    schedule: tuple[ScheduleSpec, ...] = ()

    @field_validator("schedule", mode="before")
    @classmethod
    def _schedule_list(cls, v: Any) -> Any:
        # TOML gives an array of tables as a list; the model keeps a tuple (frozen).
        if isinstance(v, list | tuple) and len(v) > MAX_SCHEDULED_ACTIONS:
            raise RuleError(
                f"{len(v)} entries; Application Auto Scaling allows at most "
                f"{MAX_SCHEDULED_ACTIONS} scheduled actions per scalable target (not "
                "adjustable), so the deploy would fail",
                "merge entries: one cron field can name several hours or days, e.g. "
                "'0 8,12,18 ? * MON-FRI *'",
            )
        return tuple(v) if isinstance(v, list) else v

    @model_validator(mode="before")
    @classmethod
    def _old_key(cls, data: Any) -> Any:
        # `gpu_metric` is read as `signal` (its former name), so a spec that
        # still uses it loads.
        if isinstance(data, dict) and "gpu_metric" in data:
            data = dict(data)
            old = data.pop("gpu_metric")
            if "signal" in data:
                raise RuleError(
                    "gpu_metric and signal are both set; gpu_metric is the old name of signal",
                    "remove gpu_metric",
                )
            data["signal"] = old
        return data

    @property
    def gpu_metric(self) -> GpuSeries:
        """The GPU series the GPU policy (or the GPU guard) tracks (the signal plan's)."""
        return SignalPlan.of(self).gpu_series

    @property
    def fast_scale_out_enabled(self) -> bool:
        """Whether the fast path is deployed (the signal plan's: on by default with concurrency)."""
        return SignalPlan.of(self).fast_path
