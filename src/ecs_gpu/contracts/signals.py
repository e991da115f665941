"""The scaling signals: their names, once, and what a ``[scaling]`` section turns on.

``[scaling] signal`` picks the series target tracking holds: "concurrency"
(requests in flight + waiting per task, demand_metric.py), "task-gpus" (the
utilization of the GPUs tasks hold, gpu_metric.py) or "asg-average" (the
agent's ASG-wide average). Which policies that deploys (a GPU one, a
concurrency one, the fast path) used to be worked out again by the
template, the simulator, verify and doctor; :class:`SignalPlan` says it
once and they all read it.

:data:`SERIES` is the other half: per signal, the series it scales on as
every consumer reads it (the series that must arrive, the GetMetricData
queries, whether the policy divides by GPUReservation, the simulator's GPU
scope, who publishes it, its missing-metric alarm and dashboard panel, what
verify metrics and doctor's checks read and say of it, in its contract
module's words). The template, the collector, verify, doctor and the
simulator look a signal up there instead of comparing its name, so a new
signal is a name here, a row in :data:`SERIES` and its contract module
(docs/architecture.md "Add a scaling signal").

Pure: imports nothing from infra, aws, cli, doctor or sim (only the metric
contracts beside it), so every layer can read it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
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
# The signal without [service.metrics]: nothing else to scale on.
DEFAULT_GPU_SIGNAL: Final[Signal] = "task-gpus"


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


class DeploymentNames(SeriesNames, Protocol):
    """The names the missing-metric alarms read besides the series' (naming.Names has these)."""

    @property
    def host_log_group(self) -> str: ...

    @property
    def task_log_group(self) -> str: ...

    @property
    def gpu_metric_missing_alarm(self) -> str: ...


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


@dataclass(frozen=True, slots=True)
class MissingAlarm:
    """The alarm that goes to ALARM while a series that must arrive has no datapoint."""

    construct_id: str
    # Its AlarmName; None: CloudFormation names it.
    name: Callable[[DeploymentNames], str | None]
    # (names, whether a policy tracks the series) -> the alarm's description.
    description: Callable[[DeploymentNames, bool], str]
    # From when its publisher can first publish (SignalSeries.published_by:
    # the host's setup done, or a task's model serving) to its first datapoint.
    delay_s: int


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
class Panel:
    """A tracked series' own dashboard row (None for the GPU series: the dashboard always
    draws the agent's panels, with the tracked one's expression and target)."""

    title: str
    # (period, statistic, label) of each line of the watched series.
    lines: tuple[tuple[int, str, str], ...]
    target_label: Callable[[float], str]


@dataclass(frozen=True, slots=True)
class ServerMetrics:
    """Where the service's server exposes Prometheus metrics ([service.metrics]): what a
    series a task publishes from them reads (verify's causes of a missing one)."""

    series: tuple[str, ...]
    port: int
    path: str


# ListMetrics' dimension lists of one metric name (any dimensions, last two weeks).
DimensionSets = Sequence[Sequence[Mapping[str, str]]]


@dataclass(frozen=True, slots=True)
class Verified:
    """What ``verify metrics`` waits for on a series that must arrive, and what it says."""

    # The GetMetricData queries that must each have datapoints, each labelled.
    queries: Callable[[SeriesNames], list[dict[str, Any]]]
    # Its status line's words, its table's title and what the count counts.
    waiting: Callable[[SeriesNames], str]
    title: Callable[[SeriesNames], str]
    count_label: str
    # The line when every query has data, from each query's (count, latest).
    present: Callable[[SeriesNames, Sequence[tuple[int, float | None]]], str]
    # The error's head, from the metric names missing and the timeout.
    missing: Callable[[SeriesNames, Sequence[str], float], str]
    # Likely causes for one missing metric name, from ListMetrics' dimension sets.
    explain: Callable[[str, SeriesNames, DimensionSets, ServerMetrics | None], list[str]]


@dataclass(frozen=True, slots=True)
class CheckText:
    """A doctor check's registration: its id (stable: docs/doctor.md links to it), severity,
    title, the kinds it reads and its docs row's words."""

    id: str
    severity: Literal["error", "warning"]
    title: str
    requires: tuple[str, ...]
    doc: str


@dataclass(frozen=True, slots=True)
class Deployed:
    """What doctor knows of a deployment when it judges a policy's metric: the ASGs and
    clusters the snapshot holds (any when empty) and the names of the service's series."""

    asgs: tuple[str, ...]
    clusters: tuple[str, ...]
    cluster: str
    service: str


@dataclass(frozen=True, slots=True)
class Checked:
    """What doctor checks of a signal's series and what its findings say (doctor/checks)."""

    # "Does it arrive" (doctor/checks/metric.py); the signals sharing a
    # watched series share the check.
    arrives: CheckText
    # Who follows the series, in a finding ("the scaling policy tracks");
    # the signal in words ("a GPU series", "concurrency").
    followers: str
    in_words: str
    # A task's publisher's name ("sidecar"); what to look at when the series
    # does not arrive, from the tasks running (a host's ignores it).
    publisher: str
    remedy: Callable[[int], str]
    # When no policy tracks it (a host's series, which arrives anyway): the
    # finding's title, and what still reads it, from the snapshot's
    # missing-metric alarm name. None: it arrives only where it is tracked.
    untracked: tuple[str, Callable[[str | None], str]] | None
    # Is a policy's or an alarm's metric meant as this series (its namespace
    # besides counts too): the policies decide without a spec.
    meant_as: Callable[[Mapping[str, Any]], bool]
    # "Does a policy track it" (doctor/checks/scaling.py): a target-tracking
    # policy's metric and statistic judged (None: not meant as this series;
    # empty: it reads it; else the fix), and the (title, severity, fix) when
    # no policy does, as the signal's own policy or as the GPU guard.
    tracked: CheckText
    judge: Callable[[Mapping[str, Any], Any, Deployed], list[str] | None]
    missing_policy: Callable[[Deployed, bool], tuple[str, Literal["error", "warning"], str]]
    # (title, fix) of one of its target-tracking alarms without data
    # (doctor/checks/alarm.py), from the alarm's name and the series' names.
    alarm_no_data: Callable[[str, SeriesNames], tuple[str, str]]


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
    # Its policy divides the series by AWS/ECS GPUReservation (metric math).
    divides_by_reservation: bool
    # The simulator's GPU policy scope ("tasks": the task-gpus expression,
    # "asg": the agent's ASG average); None: not a GPU series.
    sim_gpu_scope: Literal["asg", "tasks"] | None
    # The missing-metric alarm on its watched series, and its dashboard row.
    alarm: MissingAlarm
    panel: Panel | None
    # Its 10-s series is the one the fast path's alarm watches (fast_path.py).
    drives_fast_path: bool
    # What verify metrics reads and says of it.
    verified: Verified
    # Who writes it: the host's agent ("host": every instance, whatever the
    # signal), or a publisher in each task ("task": only where the signal
    # deploys one, and only while a task runs, once its model serves).
    published_by: Literal["host", "task"]
    # What doctor checks of it and says.
    checked: Checked
    # The simulator's words for its policy's target value: (the design's
    # target, its short label, as a second policy beside another signal's).
    sim_target_words: Callable[[float], tuple[str, str, str]]

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

_GPU_ALARM: Final = MissingAlarm(
    construct_id=gpu_metric.MISSING_ALARM_ID,
    name=lambda n: n.gpu_metric_missing_alarm,
    description=lambda n, tracked: gpu_metric.missing_alarm_description(
        n.asg, n.host_log_group, tracked=tracked
    ),
    delay_s=gpu_metric.FIRST_DATAPOINT_DELAY_S,
)

_GPU_CHECKED: Final = Checked(
    arrives=CheckText(
        id=gpu_metric.ARRIVES_CHECK_ID,
        severity="error",
        title=gpu_metric.ARRIVES_TITLE,
        requires=("metric_data",),
        doc=gpu_metric.ARRIVES_DOC,
    ),
    followers=gpu_metric.FOLLOWERS,
    in_words=gpu_metric.IN_WORDS,
    publisher="host CloudWatch agent",
    remedy=lambda running: gpu_metric.DOCTOR_REMEDY,
    untracked=(gpu_metric.UNTRACKED_TITLE, gpu_metric.untracked_readers),
    meant_as=lambda m: m.get("Namespace") == gpu_metric.NAMESPACE or gpu_metric.meant_as(m),
    tracked=CheckText(
        id=gpu_metric.TRACKED_CHECK_ID,
        severity="error",
        title=gpu_metric.TRACKED_TITLE,
        requires=("scaling_policies",),
        doc=gpu_metric.TRACKED_DOC,
    ),
    judge=lambda m, stat, at: gpu_metric.policy_problems(m, at.asgs, at.clusters),
    # Without its policy tasks still follow CPU: a warning.
    missing_policy=lambda at, guard: (
        gpu_metric.missing_policy(guard=guard)[0],
        "warning",
        gpu_metric.missing_policy(guard=guard)[1],
    ),
    alarm_no_data=lambda alarm, n: gpu_metric.alarm_no_data(),
)

_GPU_VERIFIED: Final = Verified(
    queries=lambda n: gpu_metric.metric_data_queries(n.asg),
    waiting=lambda n: gpu_metric.verify_waiting(n.asg),
    title=lambda n: gpu_metric.verify_title(n.asg),
    count_label="datapoints",
    present=lambda n, series: gpu_metric.verify_present(n.asg),
    missing=lambda n, missing, timeout_s: gpu_metric.verify_missing(n.asg, missing, timeout_s),
    explain=lambda metric, n, sets, server: gpu_metric.explain_missing(metric, n.asg, sets),
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
    divides_by_reservation=True,
    sim_gpu_scope="tasks",
    alarm=_GPU_ALARM,
    panel=None,
    drives_fast_path=False,
    verified=_GPU_VERIFIED,
    published_by="host",
    checked=_GPU_CHECKED,
    sim_target_words=gpu_metric.sim_target_words,
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
            divides_by_reservation=False,
            sim_gpu_scope=None,
            alarm=MissingAlarm(
                construct_id=demand_metric.MISSING_ALARM_ID,
                name=lambda n: None,
                description=lambda n, tracked: demand_metric.missing_alarm_description(
                    n.cluster, n.service, n.task_log_group
                ),
                delay_s=demand_metric.FIRST_DATAPOINT_DELAY_S,
            ),
            panel=Panel(
                title=demand_metric.PANEL_TITLE,
                lines=demand_metric.panel_lines(),
                target_label=demand_metric.target_label,
            ),
            drives_fast_path=True,
            verified=Verified(
                queries=lambda n: demand_metric.metric_data_queries(n.cluster, n.service),
                waiting=lambda n: demand_metric.verify_waiting(n.service),
                title=lambda n: demand_metric.verify_title(n.cluster, n.service),
                count_label="periods",
                present=lambda n, series: demand_metric.verify_present(
                    n.cluster, n.service, series
                ),
                missing=lambda n, missing, timeout_s: demand_metric.verify_missing(
                    n.cluster, n.service, timeout_s
                ),
                explain=lambda metric, n, sets, server: demand_metric.explain_missing(
                    n.cluster,
                    n.service,
                    sets,
                    None if server is None else (server.series, server.port, server.path),
                ),
            ),
            published_by="task",
            sim_target_words=demand_metric.sim_target_words,
            checked=Checked(
                arrives=CheckText(
                    id=demand_metric.ARRIVES_CHECK_ID,
                    severity="error",
                    title=demand_metric.ARRIVES_TITLE,
                    requires=("metric_data", "services"),
                    doc=demand_metric.ARRIVES_DOC,
                ),
                followers=demand_metric.FOLLOWERS,
                in_words=demand_metric.IN_WORDS,
                publisher=demand_metric.PUBLISHER,
                remedy=demand_metric.doctor_remedy,
                # A task's series arrives only where a policy tracks it.
                untracked=None,
                meant_as=lambda m: demand_metric.meant_as(m),
                tracked=CheckText(
                    id=demand_metric.TRACKED_CHECK_ID,
                    severity="error",
                    title=demand_metric.TRACKED_TITLE,
                    requires=("scaling_policies",),
                    doc=demand_metric.TRACKED_DOC,
                ),
                judge=lambda m, stat, at: demand_metric.policy_problems(
                    m, stat, at.cluster, at.service
                ),
                missing_policy=lambda at, guard: (
                    demand_metric.missing_policy(at.cluster, at.service)[0],
                    "error",
                    demand_metric.missing_policy(at.cluster, at.service)[1],
                ),
                alarm_no_data=lambda alarm, n: demand_metric.alarm_no_data(
                    alarm, n.cluster, n.service
                ),
            ),
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
