"""The metric pipeline: what each step's fleet reports, and when alarms see it.

Samples taken every step are averaged into one-minute datapoints and
published to :class:`MetricSeries` with the lag of
their source: the CloudWatch agent's GPU series (``agent_flush_delay_s``),
ECS's service CPU (``ecs_metric_delay_s``), the host CPU the
anti-pattern ASG policy reads, and the load balancer's requests per target
(``alb_metric_delay_s``, :class:`RequestCountSeries`). No decisions here:
the controllers read the series.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Final

from ecs_gpu.contracts.signals import CONCURRENCY, SERIES, Signal
from ecs_gpu.sim import params as P
from ecs_gpu.sim.params import SimParams


class MetricSeries:
    """One CloudWatch series as an alarm sees it: datapoints appear after a delay.

    ``publish`` queues a one-minute datapoint (None when no instance reported
    one) with the time CloudWatch has it; ``visible`` moves due datapoints into
    the evaluation window. Missing datapoints break an alarm's run of breaching
    datapoints (target-tracking alarms go to INSUFFICIENT_DATA, aws-semantics §1).
    """

    __slots__ = ("_pending", "history")

    def __init__(self, window: int = max(P.TT_LOW_DATAPOINTS, P.CPR_LOW_DATAPOINTS)) -> None:
        self._pending: deque[tuple[float, float | None]] = deque()
        self.history: deque[float | None] = deque(maxlen=window)

    def publish(self, visible_at: float, value: float | None) -> None:
        self._pending.append((visible_at, value))

    def visible(self, t: float) -> None:
        while self._pending and self._pending[0][0] <= t:
            self.history.append(self._pending.popleft()[1])

    @property
    def latest(self) -> float | None:
        return self.history[-1] if self.history else None


class MetricPipeline:
    """GPU, service-CPU and host-CPU series, one datapoint a minute each."""

    __slots__ = (
        "_asg_scope",
        "_count_pending",
        "_cpu_n",
        "_cpu_sum",
        "_ecs_delay",
        "_flush_delay",
        "_gpi",
        "_gpt",
        "_gpu_last_t",
        "_gpu_n",
        "_gpu_sum",
        "_host_base",
        "_host_n",
        "_host_sum",
        "_idle",
        "_res_sum",
        "_span",
        "_steps_per_sample",
        "_task_cpu_share",
        "cpu",
        "gpu",
        "host",
    )

    def __init__(self, p: SimParams, step_s: float) -> None:
        self.gpu = MetricSeries()
        self.cpu = MetricSeries()
        self.host = MetricSeries()
        self._steps_per_sample = max(1, round(p.metrics.collection_interval_s / step_s))
        self._asg_scope = p.metrics.gpu_metric_scope == "asg"
        self._count_pending = p.metrics.reservation_includes_pending
        self._flush_delay = p.metrics.agent_flush_delay_s
        self._ecs_delay = p.metrics.ecs_metric_delay_s
        self._gpt = p.gpus_per_task
        self._gpi = p.gpus_per_instance
        self._idle = p.cpu_idle_percent
        self._span = p.cpu_percent_at_full_load - p.cpu_idle_percent
        self._task_cpu_share = p.task_cpu_units / p.instance_cpu_units
        self._host_base = p.metrics.host_cpu_baseline_percent
        self._gpu_sum = self._gpu_n = self._res_sum = 0.0
        self._cpu_sum = self._cpu_n = self._host_sum = self._host_n = 0.0
        self._gpu_last_t = 0.0

    def sample(
        self, i: int, t: float, ready: int, running: int, placed: int, nreg: int, u: float
    ) -> tuple[float, float]:
        """Take step ``i``'s samples; return (service CPU, host CPU) for the timeline."""
        if i % self._steps_per_sample == 0 and nreg:
            # The agent's ASG-wide average over every GPU of every registered
            # instance: GPUs no ready task works on (free, or held by a task
            # still pulling or loading) report 0 %.
            self._gpu_sum += 100.0 * ready * self._gpt * u / (nreg * self._gpi)
            self._gpu_n += 1
            self._gpu_last_t = t
            if not self._asg_scope:
                # AWS/ECS GPUReservation: GPUs reserved by tasks over all GPUs
                # of the registered (ACTIVE) instances, busy or not (§3).
                held = placed if self._count_pending else running
                self._res_sum += 100.0 * held * self._gpt / (nreg * self._gpi)
        task_cpu = host = math.nan
        idle = self._idle
        busy = ready * (idle + self._span * u) + (running - ready) * idle
        if running:
            task_cpu = busy / running
            self._cpu_sum += task_cpu
            self._cpu_n += 1
        if nreg:
            host = self._host_base + busy * self._task_cpu_share / nreg
            self._host_sum += host
            self._host_n += 1
        return task_cpu, host

    def close_minute(self, t: float) -> None:
        """Publish the minute that ended at ``t`` and move due datapoints into view."""
        gpu_n = self._gpu_n
        gpu_at = self._gpu_last_t + self._flush_delay
        gpu_v = self._gpu_sum / gpu_n if gpu_n else None
        if not self._asg_scope:
            # The metric math needs both series' datapoints for the minute;
            # ECS publishes GPUReservation with the CPU metric's lag.
            gpu_at = max(gpu_at, t + self._ecs_delay)
            if gpu_v is not None and self._res_sum > 0:
                # gpu_metric.TASK_GPU_EXPRESSION: util x 100 / reserved,
                # or the raw average while nothing is reserved.
                gpu_v = gpu_v * 100.0 / (self._res_sum / gpu_n)
        self.gpu.publish(gpu_at, gpu_v)
        self.cpu.publish(t + self._ecs_delay, self._cpu_sum / self._cpu_n if self._cpu_n else None)
        self.host.publish(
            t + self._ecs_delay, self._host_sum / self._host_n if self._host_n else None
        )
        self._gpu_sum = self._gpu_n = self._res_sum = 0.0
        self._cpu_sum = self._cpu_n = self._host_sum = self._host_n = 0.0
        self.gpu.visible(t)
        self.cpu.visible(t)
        self.host.visible(t)


class DemandPipeline:
    """The per-task concurrency series the sidecar publishes (ecs_gpu.contracts.demand_metric).

    Every ``publish_interval_s`` each RUNNING task's sidecar (it starts with
    the server container, after the image pull) scrapes its server's running
    + waiting requests and publishes one high-resolution datapoint; until
    the server first answers (model loading) it publishes 0
    (data/demand-sidecar.sh). The series' Average over a period is the sum
    of the tasks' datapoints over their count: total concurrency / RUNNING
    tasks, the count target tracking multiplies it by. Two views of it:

    * ``fast``: one datapoint per publish interval, for the fast-path alarm
      (10-second period), visible ``delay_s`` after the interval ends;
    * ``tracking``: one-minute datapoints for target tracking (Application
      Auto Scaling has no Period for custom metrics, aws-semantics.md §1);
    * ``scale_in``: the fast scale-in alarm's metric math over the same
      10-second datapoints (ecs_gpu.design.paths.fast_scale_in): their Sum over their
      SampleCount - 1, the RUNNING tasks (loading ones publish 0) with one
      fewer; the threshold with one task; visible ``delay_s`` after the period.
    """

    __slots__ = (
        "_cap",
        "_delay",
        "_in_k",
        "_in_n",
        "_in_s",
        "_in_seen",
        "_min_n",
        "_min_sum",
        "_one_task",
        "_per_step",
        "_steps_per_pub",
        "fast",
        "scale_in",
        "tracking",
    )

    def __init__(self, p: SimParams, step_s: float, fast_window: int) -> None:
        interval = p.demand.publish_interval_s
        # Steps shorter than the interval publish every few steps; longer
        # steps stand for several identical datapoints.
        self._steps_per_pub = max(1, round(interval / step_s))
        self._per_step = max(1, round(step_s / interval))
        self._delay = p.demand.metric_delay_s
        # What-if (Demand.tracking_cap_ratio): the tracked datapoint at most cap.
        ratio, target = p.demand.tracking_cap_ratio, p.tracking.target_concurrency
        self._cap = math.inf if ratio is None or target is None else ratio * target
        self.fast = MetricSeries(window=max(1, fast_window))
        self.tracking = MetricSeries()
        fsi = p.fast_scale_in
        self.scale_in = MetricSeries(window=1 if fsi is None else fsi.evaluation_periods)
        # What the expression reads with one task (never low), None without it.
        self._one_task = None if fsi is None else fsi.threshold
        # Its period's Sum and SampleCount so far, the publishes a period holds,
        # and k, one task's datapoints in a period (fast_scale_in.samples_per_task).
        self._in_s = self._in_n = 0.0
        self._in_seen = 0
        self._in_k = 1 if fsi is None else max(1, round(fsi.period_s / interval))
        self._min_sum = self._min_n = 0.0

    def sample(self, i: int, t_end: float, total: float, running: int) -> float:
        """Publish step ``i``'s datapoints (ending at ``t_end``); return the per-task value."""
        publishes = (i + 1) % self._steps_per_pub == 0
        if self._one_task is not None and publishes:
            for _ in range(self._per_step):
                self._scale_in_sample(t_end, total if running else 0.0, running)
        if not running:
            return math.nan
        value = total / running
        if publishes:
            for _ in range(self._per_step):
                self.fast.publish(t_end + self._delay, value)
                self._min_sum += total
                self._min_n += running
        return value

    def _scale_in_sample(self, t_end: float, total: float, running: int) -> None:
        """One publish interval into the fast scale-in's period: ``s / (n - k)`` at its end."""
        self._in_s += total
        self._in_n += running
        self._in_seen += 1
        if self._in_seen < self._in_k:
            return
        s, n, k = self._in_s, self._in_n, self._in_k
        # No datapoint at all (no task published): missing, not breaching.
        value = None if n == 0 else (s / (n - k) if n > k else self._one_task)
        self.scale_in.publish(t_end + self._delay, value)
        self._in_s = self._in_n = 0.0
        self._in_seen = 0

    def close_minute(self, t: float) -> None:
        """Publish the minute that ended at ``t``: the mean of its tasks' datapoints."""
        n = self._min_n
        self.tracking.publish(t + self._delay, min(self._min_sum / n, self._cap) if n else None)
        self._min_sum = self._min_n = 0.0
        self.tracking.visible(t)


class RequestCountSeries:
    """The load balancer's ALBRequestCountPerTarget, the request-count policy's series.

    Each minute's datapoint is the requests routed to a target in the minute
    over the healthy targets (RequestCountPerTarget: "the average number of
    requests received by each target", statistic Sum), visible ``delay_s``
    after the minute. None (no datapoint) in a minute without a request: the
    ALB reports only while requests flow (aws-semantics §10 "ALB metrics at no
    request"); and None while no target is healthy, when no target received a
    request (the ALB answers 503 itself; §10 "RequestCountPerTarget" [gap]).
    A missing datapoint never counts as low, so this policy holds target
    tracking's scale-in (all policies must agree) through quiet minutes.
    """

    __slots__ = ("_delay", "_requests", "_target_steps", "_targets", "series")

    def __init__(self, delay_s: float) -> None:
        self._delay = delay_s
        self.series = MetricSeries()
        self._requests = self._targets = 0.0
        self._target_steps = 0

    def sample(self, arrivals: float, targets: int) -> None:
        """One step's requests and the healthy targets they were routed to."""
        if targets <= 0:
            return
        self._requests += arrivals
        self._targets += targets
        self._target_steps += 1

    def close_minute(self, t: float) -> None:
        """Publish the minute that ended at ``t`` and move due datapoints into view."""
        n = self._target_steps
        value = None if n == 0 or self._requests <= 0 else self._requests / (self._targets / n)
        self.series.publish(t + self._delay, value)
        self._requests = self._targets = 0.0
        self._target_steps = 0
        self.series.visible(t)


# --- each signal's simulated series -----------------------------------------------

Tracked = Callable[[MetricPipeline, DemandPipeline | None], MetricSeries]


def _demand_tracking(metrics: MetricPipeline, demand: DemandPipeline | None) -> MetricSeries:
    if demand is None:
        raise ValueError("the design tracks concurrency but runs no sidecars' pipeline")
    return demand.tracking


# The one-minute series each signal's policy tracks, in a run's pipelines:
# the GPU signals read the agent's series (MetricPipeline.gpu, at the
# signal's sim_gpu_scope), concurrency the sidecars' (DemandPipeline). A new
# signal's simulated series is a row here.
TRACKED: Final[Mapping[Signal, Tracked]] = MappingProxyType(
    {
        **{
            series.signal: (lambda metrics, demand: metrics.gpu)
            for series in SERIES.values()
            if series.sim_gpu_scope is not None
        },
        CONCURRENCY: _demand_tracking,
    }
)


def tracked_series(
    p: SimParams, metrics: MetricPipeline, demand: DemandPipeline | None
) -> list[tuple[MetricSeries, float]]:
    """Each tracked signal's series and target, in signals.SignalPlan.tracked's order.

    The order is the template's; a signal whose target the design leaves
    unset runs no policy (the spec's rules require one where it deploys).
    """
    return [(TRACKED[signal](metrics, demand), target) for signal, target in p.targets]
