"""What doctor checks of each signal's series and what its findings say.

Per signal (:data:`CHECKED`): the "does it arrive" check (metric.py) and the
"does a policy track it" check (scaling.py), each with its id, title and docs
row; how a deployed policy's metric is judged against the series; and the words
of the findings (who follows the series, what to look at when it does not
arrive, an alarm without data for alarm.py). Signals that share a watched
series share its checks. The series themselves are the contracts'
(:data:`ecs_gpu.contracts.signals.SERIES`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Final, Literal

from ecs_gpu.contracts import demand_metric, gpu_metric
from ecs_gpu.contracts.signals import (
    ASG_AVERAGE,
    CONCURRENCY,
    TASK_GPUS,
    SeriesNames,
    Signal,
)


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
    """What doctor checks of a signal's series and what its findings say."""

    # "Does it arrive" (metric.py); the signals sharing a watched series
    # share the check.
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
    # "Does a policy track it" (scaling.py): a target-tracking policy's metric
    # and statistic judged (None: not meant as this series; empty: it reads
    # it; else the fix), and the (title, severity, fix) when no policy does,
    # as the signal's own policy or as the GPU guard.
    tracked: CheckText
    judge: Callable[[Mapping[str, Any], Any, Deployed], list[str] | None]
    missing_policy: Callable[[Deployed, bool], tuple[str, Literal["error", "warning"], str]]
    # (title, fix) of one of its target-tracking alarms without data
    # (alarm.py), from the alarm's name and the series' names.
    alarm_no_data: Callable[[str, SeriesNames], tuple[str, str]]


# --- the agent's GPU series -------------------------------------------------------

_REDEPLOY: Final = "Redeploy the policy from the spec (`ecs-gpu deploy`)."


def gpu_untracked_readers(missing_alarm: str | None) -> str:
    """What still reads the GPU series when no scaling policy does."""
    alarm = missing_alarm or "the GPU missing-metric alarm"
    return (
        f"only the dashboard's GPU panels (empty) and the missing-metric alarm {alarm} "
        "(ALM002 once it fires) read it"
    )


def _gpu_named(metric: Mapping[str, Any]) -> bool:
    """Named as a GPU series: the agent's prefix, or "gpu" in the name (GPUReservation too)."""
    name = str(metric.get("MetricName", ""))
    return name.startswith(gpu_metric.METRIC_PREFIX) or "gpu" in name.lower()


def gpu_meant_as(metric: Mapping[str, Any]) -> bool:
    """Meant as a GPU series: in the agent's namespace, or named as one."""
    return metric.get("Namespace") == gpu_metric.NAMESPACE or _gpu_named(metric)


def gpu_policy_problems(
    metric: Mapping[str, Any], asgs: Sequence[str], clusters: Sequence[str]
) -> list[str] | None:
    """What is wrong with a policy's metric meant as a GPU series: None, it is not meant as
    one; empty, it reads the contract's series (or the task-gpus divisor, by ClusterName of
    one of ``clusters``); else the fix. ``asgs`` and ``clusters``: the deployment's (any
    value when empty)."""
    g = gpu_metric
    name = metric.get("MetricName", "")
    dims = {d.get("Name"): d.get("Value") for d in metric.get("Dimensions", [])}
    if (metric.get("Namespace"), name) == (g.RESERVATION_NAMESPACE, g.RESERVATION_METRIC):
        # The task-gpus divisor: ECS writes it per cluster, by ClusterName only.
        if set(dims) == {g.RESERVATION_DIMENSION} and (
            not clusters or dims.get(g.RESERVATION_DIMENSION) in clusters
        ):
            return []
        return [
            f"The policy divides by {g.RESERVATION_NAMESPACE}/{name} "
            f"{dims}, but ECS writes it for this service's cluster only as "
            f"{g.RESERVATION_DIMENSION}={clusters[0] if clusters else '<cluster>'}: the tracked "
            f"expression reads a series nobody writes. {_REDEPLOY}"
        ]
    if not _gpu_named(metric):
        return None
    if (
        name == g.UTILIZATION
        and metric.get("Namespace") == g.NAMESPACE
        and set(dims) == {g.DIMENSION}
        and (not asgs or dims.get(g.DIMENSION) in asgs)
    ):
        return []
    return [
        f"The policy tracks {metric.get('Namespace')}/{name} {dims}, but the host agent "
        f"writes {g.NAMESPACE}/{g.UTILIZATION} with only "
        f"{g.DIMENSION}={asgs[0] if asgs else '<asg>'}: the policy follows a series nobody "
        f"writes. {_REDEPLOY}"
    ]


def gpu_missing_policy(*, guard: bool) -> tuple[str, str]:
    """(title, fix) when no policy tracks the GPU series: the signal's own, or the guard."""
    if guard:
        return (
            "No GPU guard policy on the service",
            "The spec sets [scaling] gpu_guard = true, but no target-tracking policy tracks "
            "GPU utilization: the guard is off, and tasks follow concurrency and CPU only. "
            "Deploy the spec's scaling policies (`ecs-gpu deploy`).",
        )
    return (
        "No GPU target-tracking policy on the service",
        "No target-tracking policy scales the service on GPU utilization: tasks follow "
        "CPU only. Deploy the spec's scaling policies (`ecs-gpu deploy`).",
    )


def gpu_alarm_no_data() -> tuple[str, str]:
    """(title, fix) of a GPU target-tracking alarm in INSUFFICIENT_DATA."""
    return (
        "GPU scaling alarm has no data",
        "Target tracking does nothing while its alarm has no data: the GPU series is not "
        "arriving, or (task-gpus) ECS's GPUReservation divisor is not. Fix the metric "
        "first (MET001, MET004 and the HOST checks).",
    )


_GPU: Final = Checked(
    arrives=CheckText(
        id="MET001",
        severity="error",
        title="The GPU metric is not published",
        requires=("metric_data",),
        doc="GetMetricData returns no datapoint for a series of the GPU metric contract "
        "(warning when no scaling policy reads it: concurrency without gpu_guard).",
    ),
    followers="the scaling policy tracks",
    in_words="a GPU series",
    publisher="host CloudWatch agent",
    remedy=lambda running: (
        "Run `ecs-gpu doctor --probe-hosts` to see the host agent: is "
        "amazon-cloudwatch-agent active, does its config collect nvidia_gpu, can it run "
        "nvidia-smi, and is cloudwatch:PutMetricData allowed on the instance role."
    ),
    untracked=("The GPU metric is not published (no policy reads it)", gpu_untracked_readers),
    meant_as=gpu_meant_as,
    tracked=CheckText(
        id="SCL001",
        severity="error",
        title="GPU policy tracks a metric nobody writes",
        requires=("scaling_policies",),
        doc="A GPU target-tracking policy's metric differs from the contract (plain or "
        "metric-math form, GPUReservation divisor included), or none exists.",
    ),
    judge=lambda m, stat, at: gpu_policy_problems(m, at.asgs, at.clusters),
    # Without its policy tasks still follow CPU: a warning.
    missing_policy=lambda at, guard: (
        gpu_missing_policy(guard=guard)[0],
        "warning",
        gpu_missing_policy(guard=guard)[1],
    ),
    alarm_no_data=lambda alarm, n: gpu_alarm_no_data(),
)


# --- the sidecars' concurrency series -----------------------------------------------


def concurrency_remedy(running: int) -> str:
    """Tasks run, yet none published: what to read, and what the task role must allow."""
    d = demand_metric
    return (
        f"{running} task(s) run, yet none published in the window. Read the "
        f"{d.SIDECAR_NAME} container's log: it must reach the server's metrics "
        "endpoint ([service.metrics] port and path, the preset's series names) and the task "
        "role must allow cloudwatch:PutMetricData with "
        f"{d.NAMESPACE_CONDITION_KEY}={d.NAMESPACE} (TD001 checks "
        "the sidecar is there)."
    )


def concurrency_meant_as(metric: Mapping[str, Any]) -> bool:
    """Meant as the concurrency series: its namespace or its name (SCL004 says what differs)."""
    return (
        metric.get("Namespace") == demand_metric.NAMESPACE
        or metric.get("MetricName") == demand_metric.METRIC_NAME
    )


def concurrency_wanted(cluster: str, service: str) -> str:
    """The series a policy must read, in words."""
    d = demand_metric
    return (
        f"{d.NAMESPACE}/{d.METRIC_NAME} ({d.cli_dimensions(cluster, service)}, "
        f"statistic {d.STATISTIC})"
    )


def concurrency_policy_problems(
    metric: Mapping[str, Any], statistic: Any, cluster: str, service: str
) -> list[str] | None:
    """What is wrong with a policy's metric meant as the series: None, it is not meant as
    it; empty, it reads the series; else the fix naming each difference."""
    if not concurrency_meant_as(metric):
        return None
    diffs = demand_metric.series_differences(metric, statistic, cluster, service)
    if not diffs:
        return []
    return [
        f"The policy tracks {'; '.join(d[2] for d in diffs)}. The sidecars "
        f"write {concurrency_wanted(cluster, service)}, the mean per task that target tracking "
        "holds at the target: this policy follows a series nobody writes (the reference "
        "module's 8.3.0 bug), so load never changes the task count. Redeploy the "
        "policy from the spec (`ecs-gpu deploy`)."
    ]


def concurrency_missing_policy(cluster: str, service: str) -> tuple[str, str]:
    """(title, fix) when no target-tracking policy tracks the series."""
    return (
        "No target-tracking policy scales the service on concurrency",
        "The service scales on concurrency, but no target-tracking policy tracks "
        f"{concurrency_wanted(cluster, service)}: load does not change the task count (only "
        "the CPU policy does, and the fast path, where deployed, only adds). Deploy the spec's "
        "scaling policies (`ecs-gpu deploy`).",
    )


def concurrency_alarm_no_data(alarm_name: str, cluster: str, service: str) -> tuple[str, str]:
    """(title, fix) of the concurrency policy's alarm in INSUFFICIENT_DATA."""
    return (
        "Concurrency scaling alarm has no data",
        f"Target tracking on concurrency does nothing while its alarm {alarm_name} has "
        f"no data: the sidecars' series {demand_metric.where(cluster, service)} is not "
        "arriving. Fix the series first: MET005 says whether it arrives and why not (no task "
        f"running, or the {demand_metric.SIDECAR_NAME} container's log and the task role's "
        "cloudwatch:PutMetricData), TD001 whether the task definition has the sidecar, "
        "and SCL004 whether the policy reads the series the sidecars write.",
    )


_CONCURRENCY: Final = Checked(
    arrives=CheckText(
        id="MET005",
        severity="error",
        title="The concurrency metric is not published",
        requires=("metric_data", "services"),
        doc="The service scales on concurrency, but GetMetricData returns no datapoint of the "
        "sidecars' per-task concurrency series (warning while the desired count is 0).",
    ),
    followers="the concurrency policy and the fast path track",
    in_words="concurrency",
    # The publisher in a task, in "no task runs, so no sidecar publishes".
    publisher="sidecar",
    remedy=concurrency_remedy,
    # A task's series arrives only where a policy tracks it.
    untracked=None,
    meant_as=concurrency_meant_as,
    tracked=CheckText(
        id="SCL004",
        severity="error",
        title="Concurrency policy tracks a series nobody writes",
        requires=("scaling_policies",),
        doc="The service scales on concurrency, but no target-tracking policy reads the "
        "sidecars' series with exactly its namespace, name, dimensions and statistic Average.",
    ),
    judge=lambda m, stat, at: concurrency_policy_problems(m, stat, at.cluster, at.service),
    missing_policy=lambda at, guard: (
        concurrency_missing_policy(at.cluster, at.service)[0],
        "error",
        concurrency_missing_policy(at.cluster, at.service)[1],
    ),
    alarm_no_data=lambda alarm, n: concurrency_alarm_no_data(alarm, n.cluster, n.service),
)

# Both GPU signals watch the agent's one series: they share its checks.
CHECKED: Final[Mapping[Signal, Checked]] = MappingProxyType(
    {TASK_GPUS: _GPU, ASG_AVERAGE: _GPU, CONCURRENCY: _CONCURRENCY}
)
