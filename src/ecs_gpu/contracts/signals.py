"""The scaling signals: their names, once, and what a ``[scaling]`` section turns on.

``[scaling] signal`` picks the series target tracking holds: "concurrency"
(requests in flight + waiting per task, demand_metric.py), "task-gpus" (the
utilization of the GPUs tasks hold, gpu_metric.py) or "asg-average" (the
agent's ASG-wide average). Which policies that deploys the template, the
simulator, verify and doctor each read from :class:`SignalPlan`, which says it
once. :data:`SERIES` holds, per signal, the facts of its series every consumer
shares; what each consumer says of a series is that consumer's own table, keyed
by signal (infra/signal_words.py, checks/verify/signal_words.py,
checks/doctor/signal_words.py, sim/signal_words.py), so a new signal is a name
here, a row in :data:`SERIES`, its contract module and a row in each table.
Pure (only the metric contracts beside it), so every layer can read it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from types import MappingProxyType
from typing import Any, Final, Literal, Protocol, get_args

from ecs_gpu.contracts import demand_metric, gpu_metric

# The [scaling] signal values, in the order docs/spec.md lists them.
Signal = Literal["concurrency", "task-gpus", "asg-average"]
# The GPU series a GPU policy (a GPU signal, or the concurrency signal's
# guard) tracks.
GpuSeries = Literal["task-gpus", "asg-average"]

SIGNALS: Final[tuple[Signal, ...]] = get_args(Signal)
CONCURRENCY: Final[Signal] = "concurrency"
TASK_GPUS: Final[Signal] = "task-gpus"
ASG_AVERAGE: Final[Signal] = "asg-average"
# The signal without [service.metrics]: nothing else to scale on.
DEFAULT_GPU_SIGNAL: Final[Signal] = TASK_GPUS


class ScalingSection(Protocol):
    """What the plan reads from ``[scaling]`` (spec.ScalingSpec has these)."""

    @property
    def signal(self) -> Signal: ...

    @property
    def gpu_guard(self) -> bool: ...

    @property
    def fast_scale_out(self) -> bool | None: ...


@dataclass(frozen=True, slots=True)
class SignalPlan:
    """What a ``[scaling]`` section deploys, derived from its signal and switches."""

    signal: Signal
    # A GPU target-tracking policy runs: a GPU signal, or the concurrency
    # signal with gpu_guard.
    tracks_gpu: bool
    # A target-tracking policy on the sidecars' concurrency series runs.
    tracks_concurrency: bool
    # The GPU series the GPU policy tracks (meaningful when tracks_gpu).
    gpu_series: GpuSeries
    # The concurrency fast path (a step policy on a 10-s alarm) is deployed.
    fast_path: bool

    @classmethod
    def of(cls, scaling: ScalingSection) -> SignalPlan:
        """The plan of a validated spec's ``[scaling]``."""
        return cls.from_parts(scaling.signal, scaling.gpu_guard, scaling.fast_scale_out)

    @classmethod
    def from_parts(
        cls, signal: Signal, gpu_guard: bool, fast_scale_out: bool | None = None
    ) -> SignalPlan:
        """The plan from the three keys (the simulator's params and sweeps carry them bare)."""
        by_concurrency = signal == CONCURRENCY
        return cls(
            signal=signal,
            tracks_gpu=not by_concurrency or gpu_guard,
            tracks_concurrency=by_concurrency,
            gpu_series="asg-average" if signal == "asg-average" else "task-gpus",
            # Default on with the concurrency signal; the GPU signals have no
            # 10-second series.
            fast_path=by_concurrency if fast_scale_out is None else fast_scale_out,
        )

    @property
    def tracked(self) -> tuple[Signal, ...]:
        """The signals a target-tracking policy holds, in the template's order."""
        return ((CONCURRENCY,) if self.tracks_concurrency else ()) + (
            (self.gpu_series,) if self.tracks_gpu else ()
        )

    @property
    def arriving(self) -> tuple[Signal, ...]:
        """The signals whose series must arrive: the GPU series first, then the tracked ones.

        The host agent's GPU series always must (the dashboard's GPU panels
        and its missing-metric alarm read it even when no GPU policy runs);
        a tracked signal's own series too. The missing-metric alarms,
        ``verify metrics`` and doctor's "does it arrive" check read this.
        """
        return tuple(dict.fromkeys((self.gpu_series, *self.tracked)))

    @property
    def divides_by_reservation(self) -> bool:
        """Whether a policy divides by ECS's GPUReservation (the task-gpus expression)."""
        return self.tracks_gpu and SERIES[self.gpu_series].divides_by_reservation


# Target tracking's scale-in alarm (AlarmLow): 15 of 15 one-minute datapoints
# below about 0.9 x the target (aws-semantics §1; the simulator's TT_LOW_DATAPOINTS):
# the fewest minutes a policy reads low before it removes a task.
TRACKING_LOW_DATAPOINTS: Final = 15


# --- each signal's series, as every consumer reads it ---------------------------------

# Construct ids of the target-tracking policies: their logical ids derive
# from them, and tests and doctor find the policies by them. Both GPU series
# deploy the one GPU policy.
GPU_POLICY_ID: Final = "GpuUtilization"
CONCURRENCY_POLICY_ID: Final = "ConcurrencyPerTask"


class SeriesNames(Protocol):
    """The physical names a series' dimensions come from (naming.Names has these)."""

    @property
    def asg(self) -> str: ...

    @property
    def cluster(self) -> str: ...

    @property
    def service(self) -> str: ...


@dataclass(frozen=True, slots=True)
class SeriesAt:
    """Names read off a deployment rather than derived (doctor's collector)."""

    asg: str
    cluster: str
    service: str


@dataclass(frozen=True, slots=True)
class Watched:
    """The series that must arrive: what the missing-metric alarm watches and doctor expects."""

    namespace: str
    metric_name: str
    statistic: str
    # The alarm's period: the tracking period (target tracking evaluates
    # one-minute datapoints).
    period_s: int
    dimensions: Callable[[SeriesNames], list[dict[str, str]]]

    def dimensions_map(self, names: SeriesNames) -> dict[str, str]:
        """The dimensions as a name -> value map (CDK's ``dimensions_map``)."""
        return {d["Name"]: d["Value"] for d in self.dimensions(names)}


def missing_expression(series_id: str, *gates: str) -> str:
    """A missing-metric alarm's metric math: the series, or -1 while every gate says it
    should arrive and it has no datapoint; 0 while a gate says it need not.

    Each gate is a count's query id (tasks RUNNING, instances in service), filled with 0,
    so an absent count reads "none". One gate gives ``IF(FILL(g, 0) > 0, FILL(m, -1), 0)``;
    more nest, the first outermost. The alarms' threshold is 0, LessThan, and their
    series are >= 0, so only the -1 breaches.
    """
    expression = f"FILL({series_id}, -1)"
    for gate in reversed(gates):
        expression = f"IF(FILL({gate}, 0) > 0, {expression}, 0)"
    return expression


@dataclass(frozen=True, slots=True)
class SignalSeries:
    """One signal's series: the contract module's facts that every consumer reads."""

    signal: Signal
    watched: Watched
    # Its target-tracking policy: the construct id, and the [scaling] key
    # of the value it holds.
    policy_id: str
    target_key: str
    # GetMetricData queries of what its policy reads (doctor's collector,
    # verify), each Id unique within the signal and across signals.
    queries: Callable[[SeriesNames], list[dict[str, Any]]]
    # The queries that must each have datapoints for the series to have
    # arrived: verify metrics waits for them, doctor's "does it arrive" reads them.
    arrival_queries: Callable[[SeriesNames], list[dict[str, Any]]]
    # Its policy divides the series by AWS/ECS GPUReservation (metric math).
    divides_by_reservation: bool
    # The simulator's GPU policy scope ("tasks": the task-gpus expression,
    # "asg": the agent's ASG average); None: not a GPU series.
    sim_gpu_scope: Literal["asg", "tasks"] | None
    # Its 10-s series is the one the fast path's alarm watches (fast_path.py).
    drives_fast_path: bool
    # Who writes it: the host's agent ("host": every instance, whatever the
    # signal), or a publisher in each task ("task": only where the signal
    # deploys one, and only while a task runs, once its model serves).
    published_by: Literal["host", "task"]
    # From when its publisher can first publish (the host's setup done, or a
    # task's model serving) to its first datapoint.
    first_datapoint_delay_s: int

    def target(self, scaling: object) -> float | None:
        """The value its policy holds, from a ``[scaling]`` section (None: not set)."""
        value: float | None = getattr(scaling, self.target_key)
        return value


_GPU_WATCHED: Final = Watched(
    namespace=gpu_metric.NAMESPACE,
    metric_name=gpu_metric.UTILIZATION,
    statistic=gpu_metric.STATISTIC,
    period_s=gpu_metric.PERIOD_S,
    dimensions=lambda n: gpu_metric.dimensions(n.asg),
)

# In the order doctor's collector asks for the queries (a snapshot's
# metric_queries keep it): the GPU series, GPUReservation, concurrency.
_TASK_GPUS: Final = SignalSeries(
    signal="task-gpus",
    watched=_GPU_WATCHED,
    policy_id=GPU_POLICY_ID,
    target_key="gpu_target_percent",
    queries=lambda n: [
        *gpu_metric.metric_data_queries(n.asg),
        gpu_metric.reservation_query(n.cluster),
    ],
    arrival_queries=lambda n: gpu_metric.metric_data_queries(n.asg),
    divides_by_reservation=True,
    sim_gpu_scope="tasks",
    drives_fast_path=False,
    published_by="host",
    first_datapoint_delay_s=gpu_metric.FIRST_DATAPOINT_DELAY_S,
)

SERIES: Final[Mapping[Signal, SignalSeries]] = MappingProxyType(
    {
        "task-gpus": _TASK_GPUS,
        # The agent's series itself: the same row but for its queries (no
        # GPUReservation), no division, the simulator's ASG-wide scope.
        "asg-average": replace(
            _TASK_GPUS,
            signal="asg-average",
            queries=lambda n: gpu_metric.metric_data_queries(n.asg),
            divides_by_reservation=False,
            sim_gpu_scope="asg",
        ),
        "concurrency": SignalSeries(
            signal="concurrency",
            watched=Watched(
                namespace=demand_metric.NAMESPACE,
                metric_name=demand_metric.METRIC_NAME,
                statistic=demand_metric.STATISTIC,
                period_s=demand_metric.TRACKING_PERIOD_S,
                dimensions=lambda n: demand_metric.dimensions(n.cluster, n.service),
            ),
            policy_id=CONCURRENCY_POLICY_ID,
            target_key="target_concurrency_per_task",
            queries=lambda n: demand_metric.metric_data_queries(n.cluster, n.service),
            arrival_queries=lambda n: demand_metric.metric_data_queries(n.cluster, n.service),
            divides_by_reservation=False,
            sim_gpu_scope=None,
            drives_fast_path=True,
            published_by="task",
            first_datapoint_delay_s=demand_metric.FIRST_DATAPOINT_DELAY_S,
        ),
    }
)


def metric_data_queries(names: SeriesNames) -> list[dict[str, Any]]:
    """Every signal's queries, each Id once, in :data:`SERIES` order.

    Doctor's collector reads them all: a snapshot may be checked without
    the spec, so it cannot know which signal the service scales on.
    """
    out: dict[str, dict[str, Any]] = {}
    for series in SERIES.values():
        for q in series.queries(names):
            out.setdefault(q["Id"], q)
    return list(out.values())
